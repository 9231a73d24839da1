//! Directory blocks.
