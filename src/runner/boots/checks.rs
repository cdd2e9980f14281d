//! What the host checks of what a guest says, before it believes it: who
//! booted (the kernel, its build, the command line, the CPUs) and that a
//! run row holds what the store takes.

use std::collections::HashSet;

use super::protocol;
use super::KernelPrep;
use crate::error::Error;
use crate::vm;

/// A guest's run row holds what the host's own rows hold: a known status,
/// each metric once, numbers (no NaN), and series of numbers. Anything
/// else would be refused by the store's fold, after the row was logged.
pub(super) fn check_row(row: &crate::store::runlog::RunRow) -> Result<(), Error> {
    if row.status != "ok" && row.status != "failed" {
        return Err(Error::failed(format!("status '{}'", row.status)));
    }
    let mut names = HashSet::new();
    for (metric, values) in &row.samples {
        if !names.insert(metric) {
            return Err(Error::failed(format!("metric '{metric}' twice")));
        }
        if values.iter().any(|v| f64::from_bits(*v).is_nan()) {
            return Err(Error::failed(format!("metric '{metric}' has a NaN value")));
        }
    }
    for (name, _, t, v) in &row.series {
        let t: Vec<f64> =
            serde_json::from_str(t).map_err(|e| Error::failed(format!("series '{name}': {e}")))?;
        let v: Vec<f64> =
            serde_json::from_str(v).map_err(|e| Error::failed(format!("series '{name}': {e}")))?;
        if t.len() != v.len() {
            return Err(Error::failed(format!(
                "series '{name}' has {} times and {} values",
                t.len(),
                v.len()
            )));
        }
    }
    Ok(())
}

/// A boot whose guest is not what the config asked for is a failed boot,
/// never a sample: the kernel's release and build, the command line
/// (which carries this boot's own id) and the CPU count must all match.
pub(super) fn check_identity(
    v: u32,
    uname: &str,
    proc_version: &str,
    cmdline: &str,
    cpus: u32,
    spec: &vm::launch::VmSpec,
    k: &KernelPrep,
) -> Result<(), Error> {
    if v != protocol::VERSION {
        return Err(Error::failed(format!(
            "the guest speaks protocol version {v}, this sysdelta {}",
            protocol::VERSION
        )));
    }
    if uname != k.image.version {
        return Err(Error::failed(format!(
            "the guest runs kernel {uname}, the config asked for {} ({})",
            k.image.version,
            k.image.path.display()
        )));
    }
    // The image's header names the build (`#1 SMP ... Debian 6.1.192-2
    // (date)`), which /proc/version repeats after the compiler.
    if let Some(build) = k.image.banner.find('#').map(|i| &k.image.banner[i..]) {
        if !proc_version.contains(build.trim()) {
            return Err(Error::failed(format!(
                "the guest's /proc/version ({}) is not the build of {} ({})",
                proc_version.trim(),
                k.image.path.display(),
                build.trim()
            )));
        }
    }
    if cmdline.trim() != spec.cmdline {
        return Err(Error::failed(format!(
            "the guest's /proc/cmdline is '{}', sysdelta passed '{}'",
            cmdline.trim(),
            spec.cmdline
        )));
    }
    if cpus != spec.cpus {
        return Err(Error::failed(format!(
            "the guest has {cpus} online CPUs, the config asked for {}",
            spec.cpus
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::check_row;
    use crate::store::runlog::RunRow;

    fn row() -> RunRow {
        RunRow {
            experiment_id: 1,
            block: 0,
            seq: 0,
            config: "k".into(),
            workload: "w".into(),
            warmup: false,
            started_at: 0.0,
            status: "ok".into(),
            reason: None,
            stderr_tail: None,
            exit_code: None,
            samples: vec![("wall".into(), vec![1.5f64.to_bits()])],
            series: vec![("s".into(), "u".into(), "[0.5]".into(), "[2.0]".into())],
            profile: vec![],
            boot: None,
        }
    }

    #[test]
    fn a_guest_row_the_store_would_refuse_is_refused_before_it_is_logged() {
        assert_eq!(check_row(&row()), Ok(()));
        let mut r = row();
        r.status = "x".into();
        assert!(check_row(&r).unwrap_err().to_string().contains("status"));
        let mut r = row();
        r.samples.push(("wall".into(), vec![2.0f64.to_bits()]));
        assert!(check_row(&r).unwrap_err().to_string().contains("twice"));
        let mut r = row();
        r.samples[0].1.push(f64::NAN.to_bits());
        assert!(check_row(&r).unwrap_err().to_string().contains("NaN"));
        let mut r = row();
        r.series[0].3 = "[1, 2]".into();
        assert!(check_row(&r)
            .unwrap_err()
            .to_string()
            .contains("1 times and 2 values"));
        let mut r = row();
        r.series[0].2 = "nope".into();
        assert!(check_row(&r).is_err());
    }
}
