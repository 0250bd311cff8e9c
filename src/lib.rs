//! linerate's orchestration: the server and client sides of a test session, and the output
//! formats. The `linerate` binary (`main.rs`) is a thin shell over this library, which exists
//! so that integration tests can run a server in-process with an injected listener and shutdown.

pub mod cli;
pub mod client;
pub mod commands;
pub mod control;
pub mod docs_gen;
pub mod latency_args;
pub mod local_time;
pub mod output;
pub mod pps_args;
pub mod probe;
pub mod repeat_args;
pub mod report_cmd;
pub mod server;
pub mod shutdown;
pub mod store_args;
pub mod store_cmd;
pub mod sweep;
pub mod target;
pub mod test_args;
