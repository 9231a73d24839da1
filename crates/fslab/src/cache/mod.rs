//! The buffer cache.
