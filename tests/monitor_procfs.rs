//! The /proc parsers and the vmstat arithmetic, on fixed text.

use sysdelta::monitor::procfs::{meminfo_value, parse_meminfo, parse_stat, parse_vmstat};
use sysdelta::monitor::vmstat::{analyze_snaps, columns, VmSnap};

const STAT_A: &str = "cpu  100 0 50 800 40 5 5 0 0 0\ncpu0 50 0 25 400 20 2 3 0 0 0\nintr 1000 1 2 3\nctxt 5000\nbtime 1\nprocesses 9\nprocs_running 3\nprocs_blocked 1\n";
const STAT_B: &str = "cpu  160 20 80 1500 60 10 10 20 0 0\nintr 3000 1 2 3\nctxt 9000\nprocs_running 2\nprocs_blocked 0\n";
const VM_A: &str = "nr_free_pages 1\npgpgin 100\npgpgout 200\npswpin 10\npswpout 20\n";
const VM_B: &str = "nr_free_pages 1\npgpgin 300\npgpgout 600\npswpin 60\npswpout 120\n";
const MEM: &str = "MemTotal:       1026752 kB\nMemFree:            4248 kB\nBuffers:            1028 kB\nCached:            20900 kB\nSwapTotal:       4194272 kB\nSwapFree:        2910404 kB\nSReclaimable:        100 kB\nHugePages_Total:       0\n";

#[test]
fn stat_vmstat_meminfo_parse() {
    let s = parse_stat(STAT_A);
    assert_eq!(s.cpu, [100, 0, 50, 800, 40, 5, 5, 0]);
    assert_eq!(
        (s.intr, s.ctxt, s.procs_running, s.procs_blocked),
        (1000, 5000, 3, 1)
    );
    let v = parse_vmstat(VM_A);
    assert_eq!(
        (v.pgpgin, v.pgpgout, v.pswpin, v.pswpout),
        (100, 200, 10, 20)
    );
    let m = parse_meminfo(MEM);
    assert_eq!(m.len(), 8);
    assert_eq!(m[0].name, "MemTotal");
    assert!(m[0].kb && !m[7].kb);
    assert_eq!(meminfo_value(MEM, "SwapFree"), Some(2910404));
    assert_eq!(meminfo_value(MEM, "Swap"), None);
}

#[test]
fn vmstat_columns_are_rates_and_shares_like_procps() {
    let a = VmSnap::parse(0.0, STAT_A, VM_A, MEM);
    let b = VmSnap::parse(2.0, STAT_B, VM_B, MEM);
    let cols = columns(&a, &b, 4.0);
    let get = |n: &str| cols.iter().find(|c| c.0 == n).unwrap().2;
    assert_eq!(get("r"), 1.0); // procs_running minus the reader
    assert_eq!(get("swpd"), (4194272 - 2910404) as f64);
    assert_eq!(get("cache"), 21000.0); // Cached + SReclaimable
    assert_eq!(get("si"), 50.0 * 4.0 / 2.0); // pages -> KiB, per second
    assert_eq!(get("so"), 100.0 * 4.0 / 2.0);
    assert_eq!(get("bi"), 100.0);
    assert_eq!(get("bo"), 200.0);
    assert_eq!(get("in"), 1000.0);
    assert_eq!(get("cs"), 2000.0);
    // ticks: user+nice 80, sys+irq+softirq 40, idle 700, iowait 20, steal 20
    assert!((get("us") - 100.0 * 80.0 / 860.0).abs() < 1e-9);
    assert!((get("sy") - 100.0 * 40.0 / 860.0).abs() < 1e-9);
    let total: f64 = ["us", "sy", "id", "wa", "st"].iter().map(|n| get(n)).sum();
    assert!((total - 100.0).abs() < 1e-9);

    let (series, sums) = analyze_snaps(&[a, b], 4.0);
    assert_eq!(series.len(), 17);
    assert!(series
        .iter()
        .all(|s| s.values.len() == 1 && s.t_offsets_s == [2.0]));
    let sum = |n: &str| sums.iter().find(|s| s.0.name == n).unwrap().1;
    assert_eq!(sum("vmstat.cs_per_s"), 2000.0);
    assert_eq!(sum("vmstat.si_per_s"), 100.0);
}

#[test]
fn kallsyms_resolve_to_the_enclosing_text_symbol() {
    use sysdelta::monitor::profile::kallsyms::Kallsyms;
    let k = Kallsyms::parse(
        "ffffffff81000000 T _stext\nffffffff81000100 t default_idle\nffffffff81000200 D some_data\nffffffff81000300 T ext4_map_blocks\t[ext4]\n0000000000000000 T hidden\n",
    );
    assert_eq!(k.resolve(0xffffffff81000150), Some("default_idle"));
    assert_eq!(k.resolve(0xffffffff81000250), Some("default_idle")); // data skipped
    assert_eq!(
        k.resolve(0xffffffff81000300),
        Some("ext4_map_blocks [ext4]")
    );
    assert_eq!(k.resolve(0x1000), None);
}

#[test]
fn cpu_lists_parse() {
    use sysdelta::monitor::profile::perf::parse_cpu_list;
    assert_eq!(parse_cpu_list("0-1"), Some(vec![0, 1]));
    assert_eq!(parse_cpu_list("0,2-4,7"), Some(vec![0, 2, 3, 4, 7]));
    assert_eq!(parse_cpu_list("x"), None);
}

#[test]
fn paranoid_level_above_zero_needs_privilege() {
    use sysdelta::monitor::profile::paranoid_error;
    let e = paranoid_error(2, false).unwrap();
    assert!(
        e.contains("perf_event_paranoid is 2") && e.contains("at most 0"),
        "{e}"
    );
    assert_eq!(paranoid_error(2, true), None);
    assert_eq!(paranoid_error(0, false), None);
    assert_eq!(paranoid_error(-1, false), None);
}

#[test]
fn profiles_merge_and_diff() {
    use sysdelta::monitor::profile::{print_diff_labeled, Profile};
    let a = Profile {
        total_samples: 100,
        symbols: vec![
            ("default_idle".into(), true, 90),
            ("blk_get_queue".into(), true, 10),
        ],
        lost: 0,
    };
    let b = Profile {
        total_samples: 100,
        symbols: vec![("default_idle".into(), true, 60), ("fget".into(), true, 40)],
        lost: 1,
    };
    let m = Profile::merge(&[a.clone(), b.clone()]);
    assert_eq!(m.total_samples, 200);
    assert_eq!(m.symbols[0], ("default_idle".to_string(), true, 150));
    assert_eq!(m.lost, 1);
    let mut out = Vec::new();
    print_diff_labeled("2.4.7", &a, "2.4.14", &b, 2, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    // fget +40pp and default_idle -30pp are the two largest changes.
    assert!(
        lines[1].contains("fget") && lines[1].contains("+40.0pp"),
        "{text}"
    );
    assert!(
        lines[2].contains("default_idle") && lines[2].contains("-30.0pp"),
        "{text}"
    );
}

#[test]
fn user_maps_keep_executable_mappings_by_file_name() {
    use sysdelta::monitor::profile::usermaps::parse_maps;
    let m = parse_maps(
        "55d0c0000000-55d0c0001000 r--p 00000000 fd:00 123 /usr/bin/cat\n\
         55d0c0001000-55d0c0005000 r-xp 00001000 fd:00 123 /usr/bin/cat\n\
         7f0000000000-7f0000100000 r-xp 00000000 fd:00 456 /usr/lib/x86_64-linux-gnu/libc.so.6\n\
         7f0000200000-7f0000300000 rwxp 00000000 00:00 0\n\
         7ffd00000000-7ffd00002000 r-xp 00000000 00:00 0 [vdso]\n",
    );
    let names: Vec<&str> = m.iter().map(|r| &*r.2).collect();
    assert_eq!(names, ["cat", "libc.so.6", "[anon]", "[vdso]"]);
    assert_eq!((m[0].0, m[0].1), (0x55d0c0001000, 0x55d0c0005000));
}
