//! `--bidir -b A,B`: each direction at its own rate (client -> server `A`, server -> client `B`),
//! through the binary; two rates without `--bidir`, a server whose `--max-rate` is below the
//! second rate, and an iperf3 server, which has one rate for both directions, refused with why.

use super::*;
use wire::spec::SpecLimits;

/// A flow's receiver goodput in a `--json` document (`client_to_server`, `server_to_client`).
fn goodput(doc: &serde_json::Value, flow: &str) -> f64 {
    let flows = doc["summary"]["flows"].as_array().unwrap();
    let f = flows
        .iter()
        .find(|f| f["flow"] == flow)
        .unwrap_or_else(|| panic!("no {flow} flow: {doc}"));
    num(&f["throughput_bps"])
}

/// Runs `args` with the in-process server and checks each direction's receiver goodput against
/// its rate: within 10 %.
fn each_direction_at_its_rate(args: &[&str], rates_bps: [f64; 2]) -> serde_json::Value {
    let doc = linerate_json(&[args, &["-t", "2", "--json", "--no-store"]].concat());
    for (flow, bps) in ["client_to_server", "server_to_client"]
        .into_iter()
        .zip(rates_bps)
    {
        let got = goodput(&doc, flow);
        let ratio = got / bps;
        assert!(
            (0.90..=1.10).contains(&ratio),
            "{args:?} {flow}: {got} bit/s of {bps}"
        );
        // What limited each direction is its own rate, judged against that rate.
        let f = doc["summary"]["flows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["flow"] == flow)
            .unwrap();
        assert_eq!(f["limited_by"]["verdict"], "application", "{flow}: {f}");
        let asked = format!("{} asked for", measure::units::format_bits_per_sec(bps));
        let evidence = f["limited_by"]["evidence"].as_str().unwrap();
        assert!(
            evidence.contains(&asked),
            "{flow}: {evidence} (want {asked})"
        );
    }
    doc
}

/// Goodput against the rates asked for needs both ends on time: run alone (`quiet::`).
mod quiet {
    use super::*;

    #[test]
    fn tcp_bidir_paces_each_direction_at_its_own_rate() {
        let doc = each_direction_at_its_rate(&["tcp", "--bidir", "-b", "200M,400M"], [2e8, 4e8]);
        let tcp = &doc["spec"]["params"]["tcp"];
        assert_eq!(num(&tcp["pacing_bps"]), 2e8, "{tcp}");
        assert_eq!(num(&tcp["reverse_pacing_bps"]), 4e8, "{tcp}");
    }

    #[test]
    fn udp_bidir_sends_each_direction_at_its_own_rate() {
        let doc = each_direction_at_its_rate(&["udp", "--bidir", "-b", "50M,100M"], [5e7, 1e8]);
        let udp = &doc["spec"]["params"]["udp"];
        assert_eq!(num(&udp["rate"]["bits_per_sec"]), 5e7, "{udp}");
        assert_eq!(num(&udp["reverse_rate"]["bits_per_sec"]), 1e8, "{udp}");
    }
}

#[test]
fn two_rates_need_bidir() {
    for args in [
        &["tcp", "-b", "100M,1G"][..],
        &["tcp", "-R", "-b", "100M,1G"],
        &["udp", "-b", "1M,2M"],
        &["udp", "-R", "--pps", "1K,2K"],
    ] {
        fails_in_one_line(args, "two rates need --bidir");
    }
    fails_in_one_line(
        &["udp", "--bidir", "-b", "1M,2M,3M"],
        "--rate 1M,2M,3M: give one rate, or two",
    );
    fails_in_one_line(
        &["tcp", "--bidir", "-b", "1G,0"],
        "--rate 1G,0: must be above 0",
    );
}

#[test]
fn a_max_rate_below_the_second_rate_is_refused_naming_it() {
    let server = TestServer::start(ServerConfig {
        limits: SpecLimits {
            max_rate_bps: Some(300_000_000),
            ..SpecLimits::default()
        },
        ..ServerConfig::default()
    });
    let port = server.addr.port().to_string();
    let at_server = |args: &[&str]| -> Vec<String> {
        [args, &["127.0.0.1", "-p", &port, "-t", "0.3", "--no-store"]]
            .concat()
            .into_iter()
            .map(String::from)
            .collect()
    };
    for (args, refusal) in [
        (
            &["tcp", "--bidir", "-b", "200M,400M"][..],
            "server refused the test: TCP pacing at 400000000 bit/s per server -> client stream \
             above this server's limit of 300000000 bit/s (serve --max-rate): ask for a second \
             rate (--rate A,B) of 300000000 or less",
        ),
        (
            &["udp", "--bidir", "-b", "50M,400M"],
            "server refused the test: UDP rate 400000000 bit/s per server -> client stream \
             above this server's limit of 300000000 bit/s (serve --max-rate)",
        ),
    ] {
        let args = at_server(args);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        fails_in_one_line(&args, refusal);
    }
    // Both rates within the limit: it runs, and the header says each direction's rate.
    let args = at_server(&["udp", "--bidir", "-b", "5M,10M", "-i", "0.1"]);
    let out = linerate_ok(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(
        out.lines()
            .next()
            .is_some_and(|l| l.contains("at 5.00 Mbit/s c->s, 10.0 Mbit/s s->c per stream")),
        "{out}"
    );
}

#[test]
fn an_iperf3_server_is_not_asked_for_two_rates() {
    // Refused before connecting: nothing need listen there.
    for args in [
        &[
            "tcp",
            "127.0.0.1",
            "-p",
            "9",
            "--iperf3",
            "--bidir",
            "-b",
            "1M,2M",
        ][..],
        &[
            "udp",
            "127.0.0.1",
            "-p",
            "9",
            "--iperf3",
            "--bidir",
            "--pps",
            "1K,2K",
        ],
    ] {
        fails_in_one_line(args, "--iperf3: iperf3 has one rate for both directions");
    }
}
