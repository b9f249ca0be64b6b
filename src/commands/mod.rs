//! One module per group of subcommands.

pub mod bus;
pub mod pulse;
