//! Rust workflows for Overspill: [`ReduceToolOutput`] and the [`AgentLoop`] example.
//!
//! The sources are compiled into the `overspill` library as `overspill::workflows` (so that the
//! `overspill` binary can register them); this crate re-exports them for Rust users.

pub use overspill::workflows::*;
