//! Rust workflows for Overspill.
