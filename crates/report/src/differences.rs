//! What differed between the columns of a comparison: each run's settings and facts (its spec
//! and both hosts' facts: kernel, CPU, the interface's MTU, driver and version, firmware, link
//! speed, offloads, rings, coalescing, queues) flattened to named values, and the names whose
//! values are not the same in every column, e.g. `client.mtu_bytes 1500 → 9000`, or
//! `client.qdisc tbf 100Mbit → none` (the qdiscs of the test's interface, in a few words).
//!
//! Invariants: a column whose runs disagree on a value shows them all (`a | b`); a value no run
//! of a column has reads `-`; fields that differ in every run by nature (times, ids) are not
//! compared.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::LabeledRuns;

/// One setting or fact that is not the same in every column.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Difference {
    /// What it is: `spec.…`, `client.…` or `server.…`, e.g. `client.nic.rx_usecs`.
    pub what: String,
    /// Its value in each column, in column order.
    pub values: Vec<String>,
}

impl Difference {
    /// `what a → b` (→ c …).
    pub fn line(&self) -> String {
        format!("{} {}", self.what, self.values.join(" → "))
    }
}

/// The differences as a table, fields × columns: a header (`field`, then each column's
/// label) and one row per difference, for the text, Markdown and HTML exporters.
pub fn differences_cells(
    labels: &[String],
    differences: &[Difference],
) -> (Vec<String>, Vec<Vec<String>>) {
    let mut header = vec!["field".to_string()];
    header.extend(labels.iter().cloned());
    let rows = differences
        .iter()
        .map(|d| {
            let mut row = vec![d.what.clone()];
            row.extend(d.values.iter().cloned());
            row
        })
        .collect();
    (header, rows)
}

/// Spec fields every run has its own of, not settings.
const NOT_SETTINGS: [&str; 1] = ["spec.interval_ms"];

/// The differences between `columns`, in name order.
pub fn differences(columns: &[LabeledRuns]) -> Vec<Difference> {
    if columns.len() < 2 {
        return Vec::new();
    }
    let per_column: Vec<BTreeMap<String, BTreeSet<String>>> =
        columns.iter().map(column_values).collect();
    let names: BTreeSet<&String> = per_column.iter().flat_map(|c| c.keys()).collect();
    // Runs of different kinds differ in every parameter of their kinds: the kind says it.
    let kinds: BTreeSet<Option<&BTreeSet<String>>> = per_column
        .iter()
        .map(|c| c.get("spec.params.kind"))
        .collect();
    let kinds_differ = kinds.len() > 1;
    names
        .into_iter()
        .filter(|name| {
            !kinds_differ
                || name.as_str() == "spec.params.kind"
                || !name.starts_with("spec.params.")
        })
        .filter_map(|name| {
            let values: Vec<String> = per_column
                .iter()
                .map(|c| c.get(name).map_or("-".to_string(), join))
                .collect();
            let first = &values[0];
            values.iter().any(|v| v != first).then(|| Difference {
                what: name.clone(),
                values,
            })
        })
        .collect()
}

fn join(values: &BTreeSet<String>) -> String {
    values.iter().cloned().collect::<Vec<_>>().join(" | ")
}

/// A run's settings: its test's whole configuration as named values, the host it ran to
/// (`target`) and every setting of its spec (`spec.streams`, `spec.params.kind`,
/// `spec.params.stream.direction`, `spec.params.udp.engine`, …, as [`differences`] names them;
/// not `spec.interval_ms`). Runs with the same settings are one test, run again: `linerate
/// trend`'s series are keyed by them, so a change of settings starts a new series.
pub fn settings(run: &record::RunRecord) -> BTreeMap<String, String> {
    let target = crate::headline::target_host(&run.target);
    let mut flat = vec![("target".to_string(), target)];
    spec_values(&run.spec, &mut flat);
    flat.into_iter().collect()
}

/// The settings of `spec`, flattened under `spec.`.
fn spec_values(spec: &wire::TestSpec, out: &mut Vec<(String, String)>) {
    let mut flat = Vec::new();
    if let Ok(spec) = serde_json::to_value(spec) {
        flatten("spec", &spec, &mut flat);
    }
    out.extend(
        flat.into_iter()
            .filter(|(name, _)| !NOT_SETTINGS.contains(&name.as_str())),
    );
}

/// Every named value of a column's runs.
fn column_values(column: &LabeledRuns) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for run in &column.runs {
        let mut flat = Vec::new();
        spec_values(&run.spec, &mut flat);
        if let Some(hosts) = &run.hosts {
            let ends = [
                ("client", Some(&hosts.client)),
                ("server", hosts.server.as_ref()),
            ];
            for (name, host) in ends {
                if let Some(host) = host {
                    host_values(name, host, &mut flat);
                }
            }
        }
        for (name, value) in flat {
            out.entry(name).or_default().insert(value);
        }
    }
    out
}

/// A host's facts under `prefix`; its qdiscs as one value, in a few words (`tbf 100Mbit`,
/// `none`): their counters differ in every run by nature.
fn host_values(prefix: &str, host: &measure::host::HostFacts, out: &mut Vec<(String, String)>) {
    if let Ok(mut value) = serde_json::to_value(host) {
        if let Some(map) = value.as_object_mut() {
            map.remove("qdiscs");
        }
        flatten(prefix, &value, out);
    }
    if let Some(q) = &host.qdiscs {
        out.push((format!("{prefix}.qdisc"), measure::qdisc::summary(q)));
    }
}

/// `value`'s leaves under `prefix`, as `prefix.key.key` names and plain-text values; `null`s
/// are left out (a fact not known is not a difference).
fn flatten(prefix: &str, value: &Value, out: &mut Vec<(String, String)>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                flatten(&format!("{prefix}.{k}"), v, out);
            }
        }
        Value::Null => {}
        Value::String(s) => out.push((prefix.to_string(), s.clone())),
        other => out.push((prefix.to_string(), other.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use measure::host::HostFacts;
    use measure::nic::NicFacts;
    use record::Hosts;

    fn run(mtu: u32, rx_usecs: u32, congestion: Option<&str>) -> record::RunRecord {
        let runs: Vec<record::RunRecord> =
            serde_json::from_str(include_str!("../tests/fixtures/tcp_runs.json")).unwrap();
        let mut r = runs[0].clone();
        if let wire::Params::TcpStream { tcp, .. } = &mut r.spec.params {
            tcp.congestion = congestion.map(Into::into);
        }
        r.hosts = Some(Hosts {
            client: HostFacts {
                mtu_bytes: Some(mtu),
                nic: Some(NicFacts {
                    rx_usecs: Some(rx_usecs),
                    ..NicFacts::default()
                }),
                ..HostFacts::default()
            },
            server: None,
        });
        r
    }

    #[test]
    fn names_what_changed_between_columns() {
        let a = LabeledRuns::new("a", vec![run(1500, 0, None), run(1500, 0, None)]);
        let b = LabeledRuns::new("b", vec![run(9000, 8, Some("bbr"))]);
        let lines: Vec<String> = differences(&[a, b]).iter().map(Difference::line).collect();
        assert_eq!(
            lines,
            vec![
                "client.mtu_bytes 1500 → 9000",
                "client.nic.rx_usecs 0 → 8",
                "spec.params.tcp.congestion - → bbr",
            ]
        );
    }

    #[test]
    fn a_changed_qdisc_is_named_in_a_few_words_not_its_counters() {
        let tbf = measure::qdisc::Qdisc {
            kind: "tbf".into(),
            handle: "1:".into(),
            parent: "root".into(),
            rate_bps: Some(100_000_000),
            during_test: Some(measure::qdisc::QdiscCounts {
                drops: 5,
                ..Default::default()
            }),
            ..Default::default()
        };
        let noqueue = measure::qdisc::Qdisc {
            kind: "noqueue".into(),
            during_test: Some(Default::default()),
            ..Default::default()
        };
        let with = |q: Vec<measure::qdisc::Qdisc>| {
            let mut r = run(1500, 0, None);
            r.hosts.as_mut().unwrap().client.qdiscs = Some(q);
            r
        };
        let mut shaped_again = tbf.clone();
        shaped_again.during_test.as_mut().unwrap().drops = 9;
        let d = differences(&[
            LabeledRuns::new("shaped", vec![with(vec![tbf]), with(vec![shaped_again])]),
            LabeledRuns::new("bare", vec![with(vec![noqueue])]),
        ]);
        let lines: Vec<String> = d.iter().map(Difference::line).collect();
        assert_eq!(lines, vec!["client.qdisc tbf 100Mbit → none"]);
    }

    #[test]
    fn a_column_that_disagrees_shows_every_value() {
        let a = LabeledRuns::new("a", vec![run(1500, 0, None), run(9000, 0, None)]);
        let b = LabeledRuns::new("b", vec![run(9000, 0, None)]);
        let d = differences(&[a, b]);
        assert_eq!(d[0].line(), "client.mtu_bytes 1500 | 9000 → 9000");
        assert!(differences(&[LabeledRuns::new("one", vec![run(1500, 0, None)])]).is_empty());
    }

    #[test]
    fn runs_of_other_kinds_differ_by_their_kind_not_every_parameter() {
        let tcp = run(1500, 0, None);
        let mut udp = tcp.clone();
        udp.spec.params = wire::Params::defaults(wire::TestKind::UdpStream);
        let d = differences(&[
            LabeledRuns::new("a", vec![tcp]),
            LabeledRuns::new("b", vec![udp]),
        ]);
        let lines: Vec<String> = d.iter().map(Difference::line).collect();
        assert_eq!(lines, vec!["spec.params.kind tcp_stream → udp_stream"]);
    }

    #[test]
    fn the_html_report_lists_them_too() {
        let columns = [
            LabeledRuns::new("a", vec![run(1500, 0, None)]),
            LabeledRuns::new("b", vec![run(9000, 0, None)]),
        ];
        let html = crate::html::render(&crate::html::Report {
            title: "t",
            subtitle: None,
            columns: &columns,
            pps: &[],
            meshes: &[],
            include_unfinished: false,
        })
        .unwrap();
        assert!(html.contains("What differed"), "{html}");
        assert!(
            html.contains("<td>client.mtu_bytes</td><td>1500</td><td>9000</td>"),
            "{html}"
        );
    }
}
