//! The FUSE adapter.
