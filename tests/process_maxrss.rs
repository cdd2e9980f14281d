//! A command's `maxrss` is the command's own: it agrees with what GNU
//! `/usr/bin/time` reports for the same `/bin/sh -c COMMAND`, however
//! large sysdelta itself is (issue 15: `true` read 8712 KiB, sysdelta's own
//! size, where /usr/bin/time read 980).

mod common;

use common::Sandbox;

fn median(mut v: Vec<u64>) -> u64 {
    v.sort_unstable();
    v[v.len() / 2]
}

/// The median over 5 runs of /usr/bin/time's `%M` (max RSS, KiB) for
/// `/bin/sh -c COMMAND`, or the reason it cannot be had.
fn time_maxrss(command: &str) -> Result<u64, String> {
    let time = std::path::Path::new("/usr/bin/time");
    if !time.exists() {
        return Err("/usr/bin/time is not installed".into());
    }
    let mut v = Vec::new();
    for _ in 0..5 {
        let out = std::process::Command::new(time)
            .args(["-f", "maxrss=%M", "/bin/sh", "-c", command])
            .output()
            .map_err(|e| format!("cannot run /usr/bin/time: {e}"))?;
        let text = String::from_utf8_lossy(&out.stderr);
        let kib = text
            .lines()
            .filter_map(|l| l.strip_prefix("maxrss="))
            .next_back()
            .and_then(|k| k.trim().parse().ok())
            .ok_or_else(|| format!("/usr/bin/time is not GNU time (said {text:?})"))?;
        v.push(kib);
    }
    Ok(median(v))
}

/// Every run's maxrss (KiB) of `sysdelta ab --config a= --config b= -- COMMAND`, and
/// sysdelta's own peak RSS during the runs (KiB).
fn sysdelta_maxrss(command: &str) -> (Vec<u64>, u64) {
    let sb = Sandbox::new();
    let out = sb.run(&[
        "ab",
        "--config",
        "a=",
        "--config",
        "b=",
        "--runs",
        "6",
        "--quiet",
        "--no-report",
        "--",
        command,
    ]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    let report = sb.json_report("1");
    let samples: Vec<u64> = report["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["status"] == "ok" && r["warmup"] == false)
        .map(|r| r["samples"]["maxrss"][0].as_f64().unwrap() as u64)
        .collect();
    assert_eq!(samples.len(), 12, "{report}");
    let own = report["analysis"]["info"]["self_usage"]["peak_rss_kib"]
        .as_u64()
        .expect("sysdelta's own peak RSS in the report");
    (samples, own)
}

#[test]
fn maxrss_of_true_is_the_shells_own_not_sysdeltas() {
    let reference = match time_maxrss("true") {
        Ok(k) => k,
        Err(why) => {
            common::skip(why);
            return;
        }
    };
    let (samples, own) = sysdelta_maxrss("true");
    // A shell's size varies by a few hundred KiB from run to run; sysdelta
    // itself is several times larger (about 9 MiB here).
    let bound = reference * 3 / 2 + 512;
    eprintln!(
        "/usr/bin/time: {reference} KiB; sysdelta: {samples:?} KiB; sysdelta's own: {own} KiB"
    );
    assert!(
        median(samples.clone()) <= bound,
        "median maxrss of true {} KiB, /usr/bin/time says {reference} KiB",
        median(samples)
    );
    assert!(
        samples.iter().all(|&k| k < own / 2),
        "maxrss of true {samples:?} KiB against sysdelta's own {own} KiB"
    );
}

#[test]
fn maxrss_of_a_known_allocation_agrees_with_usr_bin_time() {
    // dd allocates its block and fills it from /dev/zero: resident size is
    // the block plus dd's own. 4 MiB is below sysdelta's own size, 48 MiB
    // above it.
    for mib in [4, 48] {
        let command = format!("dd if=/dev/zero of=/dev/null bs={mib}M count=1 2>/dev/null");
        let reference = match time_maxrss(&command) {
            Ok(k) => k,
            Err(why) => {
                common::skip(why);
                return;
            }
        };
        let (samples, _) = sysdelta_maxrss(&command);
        let measured = median(samples.clone());
        eprintln!("{mib} MiB: /usr/bin/time {reference} KiB; sysdelta {samples:?} KiB");
        assert!(
            measured >= mib << 10,
            "{measured} KiB for a {mib} MiB block"
        );
        let off = measured.abs_diff(reference) as f64 / reference as f64;
        assert!(
            off <= 0.05,
            "{mib} MiB block: sysdelta {measured} KiB, /usr/bin/time {reference} KiB ({:.1}% off)",
            off * 100.0
        );
    }
}
