//! What the host and the guest sysdelta say to each other over the VM's
//! virtio-serial port: one JSON object a line, tagged by `t`.
//!
//! The guest says hello (who it is), the host assigns the boot's runs
//! (the plan's text, the config, the slots), and the guest sends each run
//! as soon as it is measured, in the run log's own row shape; the host
//! writes it into its run log and says `stored`, and only then does the
//! guest start the next.

use serde::{Deserialize, Serialize};

use crate::metric::MetricSpec;
use crate::plan::Overrides;
use crate::store::runlog::RunRow;

/// The protocol's version; a guest of another version is a failed boot.
pub const VERSION: u32 = 1;
/// The longest line either side accepts: a run's row with its series and
/// profile fits many times over.
pub const MAX_LINE: usize = 16 << 20;

/// What the guest says.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(tag = "t", rename_all = "snake_case")]
pub enum GuestMsg {
    /// Who booted: checked against the config before anything is assigned.
    Hello {
        v: u32,
        uname: String,
        proc_version: String,
        cmdline: String,
        cpus: u32,
        mem_total_kib: u64,
        /// Size and modification time of the sysdelta binary the guest
        /// runs: the host's own, unless it was rebuilt meanwhile.
        #[serde(default)]
        exe: String,
    },
    /// A run starts (so the host knows which run a hang or panic hit).
    Start { block: u32, seq: u32 },
    /// Metrics a workload reports for the first time (monitor summaries).
    Metrics {
        workload: String,
        specs: Vec<MetricSpec>,
    },
    /// A line for the experiment's events (a workload's note, a monitor error).
    Event { kind: String, message: String },
    /// A finished run.
    Run { row: Box<RunRow> },
    /// Every assigned run was sent; the guest powers off.
    Done,
    /// The guest cannot go on (its plan or config refused): the boot fails.
    Error { message: String },
}

/// What the host says.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(tag = "t", rename_all = "snake_case")]
pub enum HostMsg {
    Assign(Box<Assignment>),
    /// The run is in the host's run log: the guest may start the next, so
    /// storing one run never overlaps measuring the next.
    Stored {
        block: u32,
        seq: u32,
    },
}

/// The runs of one boot.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Assignment {
    pub experiment: i64,
    pub boot: i64,
    /// The config the guest enters (its kinds other than the kernel, its
    /// setup and teardown run inside the guest).
    pub config: String,
    pub plan_source: String,
    pub plan_text: String,
    pub overrides: Overrides,
    /// The host sysdelta's working directory, which the guest also sees:
    /// relative paths in commands mean the same in both.
    #[serde(default)]
    pub cwd: Option<String>,
    pub slots: Vec<AssignedSlot>,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct AssignedSlot {
    pub block: u32,
    pub seq: u32,
    pub workload: usize,
    pub warmup: bool,
}

/// One message as a line (newline included).
pub fn line<T: Serialize>(msg: &T) -> Vec<u8> {
    let mut v = serde_json::to_vec(msg).expect("protocol messages serialize");
    v.push(b'\n');
    v
}

/// What identifies a sysdelta binary cheaply: its size and modification
/// time (the guest sees the host's file through virtiofs, times included).
pub fn exe_identity(path: &std::path::Path) -> String {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path)
        .map(|m| {
            format!(
                "{} bytes, mtime {}.{:09}",
                m.len(),
                m.mtime(),
                m.mtime_nsec()
            )
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip_as_tagged_lines() {
        let m = GuestMsg::Start { block: 2, seq: 7 };
        let l = line(&m);
        assert_eq!(l, b"{\"t\":\"start\",\"block\":2,\"seq\":7}\n");
        assert_eq!(serde_json::from_slice::<GuestMsg>(&l).unwrap(), m);
        assert_eq!(
            serde_json::from_slice::<GuestMsg>(b"{\"t\":\"done\"}").unwrap(),
            GuestMsg::Done
        );
    }
}
