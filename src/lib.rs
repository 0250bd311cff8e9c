//! linerate's command line: flags into typed plans, orchestration of the `session` crate's
//! client and server, and the output formats. The `linerate` binary (`main.rs`) is a thin shell
//! over this library, which exists so that integration tests can reach the commands' pieces.

pub mod check_cmd;
pub mod cli;
pub mod commands;
pub mod connection_args;
pub mod docs_gen;
pub mod latency_args;
pub mod measuring;
pub mod output;
pub mod plan_check;
pub mod plan_cmd;
pub mod pps_args;
pub mod reach;
pub mod repeat_args;
pub mod report_cmd;
pub mod serve_cmd;
pub mod shutdown;
pub mod store_args;
pub mod store_cmd;
pub mod sweep;
pub mod test_args;
pub mod trend_cmd;
pub mod ui_accepts;
pub mod ui_cmd;
