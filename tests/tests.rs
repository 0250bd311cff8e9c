//! linerate's integration tests: real client/server pairs on loopback and across network
//! namespaces, protocol abuse, bad input through the binary, and Ctrl-C.

mod abuse;
mod amount;
mod architecture;
mod auth;
mod bidir_rates;
mod budgets;
mod cli;
mod crr_netns;
mod datagrams_frames_netns;
mod delay_line;
mod deploy;
mod disk;
mod efficiency;
mod faults;
#[cfg(target_os = "linux")]
mod frames_e2e;
mod frames_live;
mod frames_netns;
mod fuzz;
mod habits;
mod harness;
mod hostile_bounds;
mod hostile_budgets;
mod hostile_deadlines;
mod hostile_frames;
mod hostile_growth;
mod hostile_hygiene;
mod hostile_metrics;
mod hostile_relay;
mod hostile_store;
mod hostile_ui;
mod interval_cpu;
mod iperf3;
mod iperf3_bad;
mod iperf3_commands;
mod iperf3_netns;
mod iperf3_store;
mod iperf3_udp;
mod json_stream;
mod kubernetes;
mod lab_util;
mod latency;
mod limits;
mod live_fuzz;
mod loopback;
mod loss_netns;
mod mesh_netns;
mod metrics;
mod netns;
mod netns_errors;
mod one_truth_netns;
mod pg_store;
mod plan;
mod plan_check;
mod proc;
mod protocol;
mod qdisc_netns;
mod registry;
mod regressions;
mod relay;
mod report_cli;
mod rpm;
mod rpm_netns;
mod rr;
mod run_groups;
mod rx_modes;
mod self_probes;
mod send_modes;
mod skip;
mod soak;
mod store;
mod store_cmd;
mod summary_text;
mod sweep;
mod sweep_args;
mod sweep_load;
mod udp_loopback;
mod udp_netns;
mod ui_api;
mod ui_browser;
mod ui_form;
mod ui_trend;
mod util;
mod verdict_netns;
mod vocabulary;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use session::server::ServerConfig;
use util::*;
use wire::spec::Direction;
use wire::{frame, ClientMsg, Hello, ServerMsg};

/// A server with the default timeouts, for tests that must not fail on a busy machine.
fn test_server() -> TestServer {
    TestServer::start(ServerConfig::default())
}

/// A server that gives up on a silent handshake after 500 ms, for the tests that wait for it.
fn fast_server() -> TestServer {
    TestServer::start(ServerConfig {
        handshake_timeout: Duration::from_millis(500),
        ..ServerConfig::default()
    })
}
