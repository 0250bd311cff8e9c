//! [`MeshMatrix`]: what `linerate mesh` measured, one cell per ordered pair of hosts (rows:
//! from, columns: to), as a table, the JSON document `{"kind":"mesh","cells":[…]}` and, in
//! `chart::mesh_chart`, a heatmap; gathered from a mesh's stored runs for `linerate report`.
//!
//! Each cell holds the figures its run has (throughput, loss, p50 round trip, connections/s);
//! the matrix shows the one its test kind is about ([`MeshFigure::of_kind`]).

use std::collections::BTreeMap;

use analysis::metric_id::MetricId;
use record::{RunId, RunRecord, StoredRun};
use serde::{Deserialize, Serialize};
use wire::spec::{FamilyId, Headline, Loss};
use wire::TestKind;

use crate::table::{Align, TableStyle, TextTable};

/// The tag every run of one mesh carries, with the mesh's id as its value.
pub const MESH_ID_TAG: &str = "mesh_id";

/// One ordered pair's outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MeshCell {
    /// The host that ran the test as its client (the relay).
    pub from: String,
    /// The host it tested towards.
    pub to: String,
    /// Receiver goodput, bits/s (stream kinds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throughput_bps: Option<f64>,
    /// Lost datagrams, % of sent (UDP).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss_pct: Option<f64>,
    /// Median round trip, µs (request/response kinds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt_p50_us: Option<f64>,
    /// Connections per second (`crr`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connections_per_s: Option<f64>,
    /// The stored run (none with `--no-store`, or when the pair failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<RunId>,
    /// Why the pair has no figures: its error, or `not run` after an interrupt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl MeshCell {
    /// The cell of a run of `from` towards `to`.
    pub fn of_run(from: &str, to: &str, record: &RunRecord, run: Option<RunId>) -> Self {
        // The figures as the one metric list reads them (`analysis::metric_id::metric`), in base units.
        let figure = |id: MetricId| (analysis::metric_id::metric(id).base)(record);
        let stream = record.kind.row().family != FamilyId::Transaction;
        Self {
            from: from.into(),
            to: to.into(),
            throughput_bps: figure(MetricId::Throughput).filter(|_| stream),
            loss_pct: figure(MetricId::Loss).filter(|_| record.kind.row().loss == Loss::Datagrams),
            rtt_p50_us: figure(MetricId::LatencyP50),
            connections_per_s: figure(MetricId::Connections),
            run,
            error: None,
        }
    }

    /// The cell of a pair that failed (or, with `not run`, never ran).
    pub fn failed(from: &str, to: &str, error: String) -> Self {
        Self {
            from: from.into(),
            to: to.into(),
            throughput_bps: None,
            loss_pct: None,
            rtt_p50_us: None,
            connections_per_s: None,
            run: None,
            error: Some(error),
        }
    }
}

/// The figure a matrix shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MeshFigure {
    /// Receiver goodput (tcp, udp).
    ThroughputBps,
    /// Median round trip (rr).
    RttP50Us,
    /// Connections per second (crr).
    ConnectionsPerS,
}

impl MeshFigure {
    /// The figure a mesh of `kind` shows.
    pub fn of_kind(kind: TestKind) -> Self {
        match kind.row().headline {
            Headline::Connections => Self::ConnectionsPerS,
            Headline::Transactions => Self::RttP50Us,
            Headline::Throughput => Self::ThroughputBps,
        }
    }

    /// Its value in `cell`, in base units.
    pub fn value(self, cell: &MeshCell) -> Option<f64> {
        match self {
            Self::ThroughputBps => cell.throughput_bps,
            Self::RttP50Us => cell.rtt_p50_us,
            Self::ConnectionsPerS => cell.connections_per_s,
        }
    }

    /// What it is, with its unit and which way is better, for a caption.
    pub fn caption(self) -> &'static str {
        match self {
            Self::ThroughputBps => "receiver goodput, bit/s (higher is better)",
            Self::RttP50Us => "median round trip, µs (lower is better)",
            Self::ConnectionsPerS => "connections per second (higher is better)",
        }
    }

    /// A value as the table shows it.
    pub fn format(self, v: f64) -> String {
        match self {
            Self::ThroughputBps => measure::units::format_bits_per_sec(v),
            Self::RttP50Us => format!("{v:.1} us"),
            Self::ConnectionsPerS => format!("{v:.0}/s"),
        }
    }
}

/// A mesh: its hosts in the order given and a cell per ordered pair.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MeshMatrix {
    /// Always `mesh` (the document's kind).
    pub kind: String,
    /// The id its runs are tagged with (`mesh_id`).
    pub mesh_id: String,
    /// The test every cell ran.
    pub test: TestKind,
    /// The figure the matrix shows.
    pub figure: MeshFigure,
    /// Rows and columns, in order.
    pub hosts: Vec<String>,
    /// The cells, in the order they ended.
    pub cells: Vec<MeshCell>,
}

impl MeshMatrix {
    /// An empty matrix over `hosts` for tests of `test`.
    pub fn new(mesh_id: String, test: TestKind, hosts: Vec<String>) -> Self {
        Self {
            kind: "mesh".into(),
            mesh_id,
            test,
            figure: MeshFigure::of_kind(test),
            hosts,
            cells: Vec::new(),
        }
    }

    /// The cell of `from` towards `to`.
    pub fn cell(&self, from: &str, to: &str) -> Option<&MeshCell> {
        self.cells.iter().find(|c| c.from == from && c.to == to)
    }

    /// The meshes among `runs`, by id in the order of their first run: each run tagged
    /// `mesh_id`, `from` and `to` is a cell (the latest for a pair that appears twice);
    /// hosts in the order they first appear.
    pub fn of_runs<'a>(runs: impl IntoIterator<Item = &'a StoredRun>) -> Vec<MeshMatrix> {
        let mut meshes: Vec<MeshMatrix> = Vec::new();
        let mut index: BTreeMap<String, usize> = BTreeMap::new();
        for run in runs {
            let tag = |k| run.tags.get(k).map(str::to_string);
            let (Some(id), Some(from), Some(to)) = (tag(MESH_ID_TAG), tag("from"), tag("to"))
            else {
                continue;
            };
            let i = *index.entry(id.clone()).or_insert_with(|| {
                meshes.push(MeshMatrix::new(id, run.record.kind, Vec::new()));
                meshes.len() - 1
            });
            let m = &mut meshes[i];
            for h in [&from, &to] {
                if !m.hosts.contains(h) {
                    m.hosts.push(h.clone());
                }
            }
            m.cells.retain(|c| !(c.from == from && c.to == to));
            m.cells
                .push(MeshCell::of_run(&from, &to, &run.record, Some(run.id)));
        }
        meshes
    }

    /// The matrix as a table: a row per `from`, a column per `to`; `-` on the diagonal,
    /// `error` or `not run` where a pair has no figure (the errors are listed by
    /// [`MeshMatrix::errors_text`]).
    pub fn table(&self, style: TableStyle) -> String {
        let mut t = TextTable::new().column("from \\ to", Align::Left);
        for h in &self.hosts {
            t = t.column(h.clone(), Align::Right);
        }
        for from in &self.hosts {
            let mut row = vec![from.clone()];
            for to in &self.hosts {
                row.push(self.cell_text(from, to));
            }
            t.row(row);
        }
        t.render(style)
    }

    /// What the matrix shows, with its unit and which way is better; a UDP mesh's cells add
    /// their loss.
    pub fn caption(&self) -> String {
        match self.test.row().loss {
            Loss::Datagrams => format!(
                "{}; datagrams lost, % of sent (lower is better)",
                self.figure.caption()
            ),
            Loss::None | Loss::Transactions => self.figure.caption().into(),
        }
    }

    /// A cell as the table shows it: its figure (a UDP cell's with its loss), `error`,
    /// `not run`, or `-` on the diagonal.
    pub fn cell_text(&self, from: &str, to: &str) -> String {
        if from == to {
            return "-".into();
        }
        match self.cell(from, to) {
            None => "not run".into(),
            Some(c) => match (self.figure.value(c), &c.error) {
                // A cell has a loss only from a UDP run (`MeshCell::of_run`).
                (Some(v), _) => match c.loss_pct {
                    Some(loss) => format!("{}, {loss:.2} % lost", self.figure.format(v)),
                    None => self.figure.format(v),
                },
                (None, Some(e)) if e == "not run" => "not run".into(),
                (None, Some(_)) => "error".into(),
                (None, None) => "n/a".into(),
            },
        }
    }

    /// What `linerate mesh` prints: a title line, the table, and a line per failed pair.
    pub fn text(&self) -> String {
        let title = format!(
            "{} mesh {}: {}",
            self.test.as_str(),
            self.mesh_id,
            self.caption()
        );
        let errors = self.errors_text();
        let errors = if errors.is_empty() {
            errors
        } else {
            format!("\n{errors}")
        };
        format!("{title}\n{}{errors}", self.table(TableStyle::Plain))
    }

    /// One line per failed pair, `from -> to: why`, in row order.
    pub fn errors_text(&self) -> String {
        let at = |h: &str| self.hosts.iter().position(|x| x == h);
        let mut cells: Vec<&MeshCell> = self.cells.iter().collect();
        cells.sort_by_key(|c| (at(&c.from), at(&c.to)));
        cells
            .into_iter()
            .filter_map(|c| {
                let e = c.error.as_ref()?;
                Some(format!("{} -> {}: {e}\n", c.from, c.to))
            })
            .collect()
    }

    /// Pairs that failed (not those left unrun by an interrupt).
    pub fn failed(&self) -> usize {
        self.cells
            .iter()
            .filter(|c| c.error.as_deref().is_some_and(|e| e != "not run"))
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(from: &str, to: &str, bps: Option<f64>, error: Option<&str>) -> MeshCell {
        MeshCell {
            throughput_bps: bps,
            error: error.map(str::to_string),
            ..MeshCell::failed(from, to, String::new())
        }
    }

    #[test]
    fn the_table_has_a_row_per_from_and_marks_the_diagonal_and_failures() {
        let mut m = MeshMatrix::new(
            "m1".into(),
            TestKind::TcpStream,
            vec!["a".into(), "b".into(), "c".into()],
        );
        m.cells = vec![
            cell("a", "b", Some(95e6), None),
            cell("b", "a", Some(190e6), None),
            cell("a", "c", None, Some("cannot connect")),
            cell("c", "a", None, Some("not run")),
        ];
        let text = m.table(TableStyle::Plain);
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].starts_with("from \\ to") && lines[0].ends_with('c'),
            "{text}"
        );
        assert!(
            lines[1].starts_with('a')
                && lines[1].contains("95.0 Mbit/s")
                && lines[1].contains("error"),
            "{text}"
        );
        assert!(
            lines[2].contains("190 Mbit/s") || lines[2].contains("190.0 Mbit/s"),
            "{text}"
        );
        assert!(lines[3].contains("not run"), "{text}");
        assert_eq!(m.failed(), 1);
        assert_eq!(m.errors_text(), "a -> c: cannot connect\nc -> a: not run\n");
        let json = serde_json::to_value(&m).unwrap();
        assert_eq!(json["kind"], "mesh");
        assert_eq!(json["cells"][0]["throughput_bps"], 95e6);
        assert!(json["cells"][2].get("throughput_bps").is_none());
        assert_eq!(json["cells"][2]["error"], "cannot connect");
    }

    #[test]
    fn a_udp_cell_shows_its_loss_beside_its_goodput() {
        let mut m = MeshMatrix::new(
            "m2".into(),
            TestKind::UdpStream,
            vec!["a".into(), "b".into()],
        );
        m.cells = vec![
            MeshCell {
                loss_pct: Some(1.234),
                ..cell("a", "b", Some(95e6), None)
            },
            cell("b", "a", Some(50e6), None),
        ];
        assert_eq!(m.cell_text("a", "b"), "95.0 Mbit/s, 1.23 % lost");
        assert_eq!(
            m.cell_text("b", "a"),
            "50.0 Mbit/s",
            "no loss figure: none shown"
        );
        assert!(
            m.text().lines().next().unwrap().contains("datagrams lost"),
            "{}",
            m.text()
        );
    }
}
