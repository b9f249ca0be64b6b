//! One module per group of subcommands.

pub mod bridge;
pub mod bus;
pub mod codex_trust;
pub mod config;
pub mod demo;
pub mod hook;
pub mod install;
pub mod pulse;
pub mod replay;
pub mod top;
