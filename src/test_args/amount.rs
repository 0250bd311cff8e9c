//! `-n BYTES` and `-k BLOCKS` on `tcp` and `udp`: a test by amount, as ttcp, nuttcp and iperf3
//! take it (`wire::spec::Amount`, read by `TestSpec::by_amount`).

/// `-n`/`-k`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct AmountArgs {
    /// Move BYTES each way (K, M, G: binary multiples) and end once they have arrived, as
    /// iperf3 -n; the summary gives the time it took.
    #[arg(
        long = "bytes",
        short = 'n',
        value_name = "BYTES",
        conflicts_with = "blocks"
    )]
    pub bytes: Option<String>,
    /// Move BLOCKS writes of -l bytes (tcp) or datagrams (udp) each way (K, M: binary
    /// multiples), as iperf3 -k.
    #[arg(long = "blocks", short = 'k', value_name = "BLOCKS")]
    pub blocks: Option<String>,
}
