//! One module per group of subcommands.

pub mod bus;
pub mod config;
pub mod hook;
pub mod pulse;
