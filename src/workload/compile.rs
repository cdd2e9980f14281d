//! `compile`: a kernel build in miniature. `prepare` generates a
//! deterministic C source tree (headers, a few hundred .c files, a
//! Makefile); each run deletes the objects and times `make -jN` with the
//! system cc, the 2002 LTT study's "Compile" column.
//!
//! Also home of [`launch`], the process launcher the built-in workloads
//! share (it honours every field of RunContext).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::error::Error;
use crate::metric::{Direction, MetricSpec};
use crate::workload::{MetricSamples, RunContext, RunOutcome, Workload};

const KEYS: &[&str] = &["files", "functions", "jobs", "cc", "cflags", "seed"];

pub struct CompileWorkload {
    files: usize,
    functions: usize,
    jobs: usize,
    cc: String,
    cflags: String,
    seed: u64,
    dir: Option<PathBuf>,
}

impl CompileWorkload {
    /// Parameters: `files` (default 300), `functions` per file (12), `jobs`
    /// (online CPUs), `cc` ("cc"), `cflags` ("-O2"), `seed` (1).
    pub fn from_params(v: &toml::Value) -> Result<Self, Error> {
        let t = param_table("compile", v, KEYS)?;
        Ok(CompileWorkload {
            files: param_usize("compile", t, "files", 300, 1, 100_000)?,
            functions: param_usize("compile", t, "functions", 12, 1, 1000)?,
            jobs: param_usize("compile", t, "jobs", online_cpus(), 1, 4096)?,
            cc: param_str("compile", t, "cc", "cc")?,
            cflags: param_str("compile", t, "cflags", "-O2")?,
            seed: param_usize("compile", t, "seed", 1, 0, usize::MAX)? as u64,
            dir: None,
        })
    }
}

impl Workload for CompileWorkload {
    fn metrics(&self) -> Vec<MetricSpec> {
        vec![MetricSpec::new("build_time", "s", Direction::Lower)]
    }

    fn prepare(&mut self, scratch: &Path) -> Result<()> {
        for tool in [self.cc.as_str(), "make"] {
            if launch::which(tool).is_none() {
                bail!("compile: `{tool}` is not installed (not in PATH)");
            }
        }
        let dir = scratch.join("compile");
        generate_tree(&dir, self.files, self.functions, self.seed)?;
        self.dir = Some(dir);
        Ok(())
    }

    /// One run: remove objects (not timed), then time `make -jN` from spawn
    /// to exit, all of it (no overhead subtracted).
    fn run(&mut self, ctx: &RunContext) -> RunOutcome {
        let Some(dir) = &self.dir else {
            return launch::failed("compile: run before prepare");
        };
        if let Err(e) = clean_tree(dir) {
            return launch::failed(&format!("compile: cannot clean objects: {e:#}"));
        }
        // The compiler's temporary files go inside the tree, so a run that
        // is killed (timeout, Ctrl-C) leaves nothing in /tmp: the tree is
        // removed with the experiment's scratch directory.
        let tmp = dir.join(".tmp");
        if let Err(e) = std::fs::create_dir_all(&tmp) {
            return launch::failed(&format!("compile: cannot create {}: {e}", tmp.display()));
        }
        let mut cmd = Command::new("make");
        cmd.env("TMPDIR", &tmp);
        cmd.arg("-C")
            .arg(dir)
            .arg(format!("-j{}", self.jobs))
            .arg("-s")
            .arg(format!("CC={}", self.cc))
            .arg(format!("CFLAGS={}", self.cflags));
        match launch::run(cmd, ctx) {
            Ok(done) if done.status.success() => RunOutcome::Ok(vec![MetricSamples {
                metric: "build_time".into(),
                values: vec![done.elapsed.as_secs_f64()],
            }]),
            Ok(done) => done.failure("compile: make failed"),
            Err(outcome) => outcome,
        }
    }

    fn cleanup(&mut self) {
        if let Some(dir) = self.dir.take() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// A built-in's parameter table, checked for unknown keys: `params`, or
/// an empty table when the plan gave none (or not a table).
pub(crate) fn param_table<'a>(
    kind: &str,
    params: &'a toml::Value,
    keys: &[&str],
) -> Result<&'a toml::Table, Error> {
    static EMPTY: std::sync::LazyLock<toml::Table> = std::sync::LazyLock::new(toml::Table::new);
    let t = match params {
        toml::Value::Table(t) => t,
        _ => &EMPTY,
    };
    check_keys(kind, t, keys)?;
    Ok(t)
}

fn check_keys(kind: &str, t: &toml::Table, keys: &[&str]) -> Result<(), Error> {
    for k in t.keys() {
        if !keys.contains(&k.as_str()) {
            return Err(Error::bad(format!(
                "unknown parameter `{k}` for {kind} (expected one of: {})",
                keys.join(", ")
            )));
        }
    }
    Ok(())
}

pub(crate) fn param_usize(
    kind: &str,
    t: &toml::Table,
    key: &str,
    default: usize,
    min: usize,
    max: usize,
) -> Result<usize, Error> {
    match t.get(key) {
        None => Ok(default),
        Some(toml::Value::Integer(i)) if *i >= min as i64 && (*i as u64) <= max as u64 => {
            Ok(*i as usize)
        }
        Some(other) => Err(Error::bad(format!(
            "{kind}.{key} must be an integer from {min} to {max}, not {other}"
        ))),
    }
}

pub(crate) fn param_str(
    kind: &str,
    t: &toml::Table,
    key: &str,
    default: &str,
) -> Result<String, Error> {
    match t.get(key) {
        None => Ok(default.to_string()),
        Some(toml::Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(Error::bad(format!(
            "{kind}.{key} must be a string, not {other}"
        ))),
    }
}

pub(crate) fn online_cpus() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

fn clean_tree(dir: &Path) -> Result<()> {
    let _ = std::fs::remove_file(dir.join("prog"));
    for e in std::fs::read_dir(dir.join("src"))? {
        let p = e?.path();
        if p.extension().is_some_and(|x| x == "o") {
            std::fs::remove_file(p)?;
        }
    }
    Ok(())
}

const HEADERS: usize = 12;

/// Write the tree: include/hN.h, src/fNNNN.c, src/main.c and a Makefile.
/// Same (files, functions, seed) gives byte-identical sources.
pub fn generate_tree(dir: &Path, files: usize, functions: usize, seed: u64) -> Result<()> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir.join("include"))
        .with_context(|| format!("cannot create {}", dir.display()))?;
    std::fs::create_dir_all(dir.join("src"))?;
    for h in 0..HEADERS {
        std::fs::write(
            dir.join(format!("include/h{h}.h")),
            generate_header(h, seed),
        )?;
    }
    let mut main = String::from("#include <stdio.h>\n\n");
    for f in 0..files {
        std::fs::write(
            dir.join(format!("src/f{f:04}.c")),
            generate_c_file(f, functions, seed),
        )?;
        writeln!(main, "extern long entry_{f}(long seed);").unwrap();
    }
    main.push_str("\nint main(void)\n{\n\tlong acc = 0;\n");
    for f in 0..files {
        writeln!(main, "\tacc += entry_{f}(acc + {f});").unwrap();
    }
    main.push_str("\tprintf(\"%ld\\n\", acc);\n\treturn 0;\n}\n");
    std::fs::write(dir.join("src/main.c"), main)?;
    std::fs::write(dir.join("Makefile"), MAKEFILE)?;
    Ok(())
}

const MAKEFILE: &str = "# Generated by sysdelta's compile workload.
CC ?= cc
CFLAGS ?= -O2
SRCS := $(sort $(wildcard src/*.c))
OBJS := $(SRCS:.c=.o)
HDRS := $(wildcard include/*.h)

prog: $(OBJS)
\t$(CC) -o $@ $(OBJS)

src/%.o: src/%.c $(HDRS)
\t$(CC) $(CFLAGS) -Iinclude -c -o $@ $<

clean:
\trm -f $(OBJS) prog
";

const WORDS: &[&str] = &[
    "buf", "len", "idx", "count", "state", "flags", "node", "next", "prev", "page", "queue",
    "lock", "entry", "offset", "size", "mask", "shift", "hash", "key", "value", "req", "dev",
    "inode", "dentry", "task", "cpu", "irq", "timer", "slot", "order",
];

const SYLLABLES: &[&str] = &[
    "ac", "al", "an", "ar", "ba", "be", "ca", "ch", "co", "de", "di", "el", "en", "er", "ex", "fi",
    "ga", "ha", "in", "io", "is", "la", "le", "li", "lo", "ma", "me", "mi", "mo", "na", "ne", "no",
    "nu", "or", "pa", "pe", "po", "ra", "re", "ri", "ro", "sa", "se", "si", "so", "st", "ta", "te",
    "ti", "to", "tr", "un", "ur", "va", "ve", "wr", "xa", "ze",
];

/// A word: half the time a common kernel-ish one, else one made of 2-4
/// syllables, so vocabulary grows with the tree as in real sources (this is
/// what gives the corpus the compressibility of source code, ~4-8x with bzip2).
fn word(rng: &mut ChaCha8Rng) -> String {
    if rng.random_bool(0.5) {
        return WORDS[rng.random_range(0..WORDS.len())].to_string();
    }
    (0..rng.random_range(2..5))
        .map(|_| SYLLABLES[rng.random_range(0..SYLLABLES.len())])
        .collect()
}

fn ident(rng: &mut ChaCha8Rng) -> String {
    format!("{}_{}", word(rng), word(rng))
}

/// A comment sentence of 4-14 words.
fn sentence(rng: &mut ChaCha8Rng) -> String {
    let n = rng.random_range(4..15);
    (0..n).map(|_| word(rng)).collect::<Vec<_>>().join(" ")
}

fn generate_header(h: usize, seed: u64) -> String {
    let mut rng = ChaCha8Rng::seed_from_u64(seed.wrapping_mul(1_000_003).wrapping_add(h as u64));
    let mut s = format!("/* Generated header {h}. */\n#ifndef H{h}_H\n#define H{h}_H\n\n");
    writeln!(s, "#define H{h}_MASK 0x{:x}UL", rng.random::<u32>()).unwrap();
    writeln!(s, "#define H{h}_SHIFT {}", rng.random_range(1..13)).unwrap();
    s.push_str(&format!("\nstruct h{h}_ctx {{\n"));
    for i in 0..rng.random_range(4..10) {
        writeln!(s, "\tlong {}_{i};", ident(&mut rng)).unwrap();
    }
    s.push_str("};\n\n");
    for i in 0..4 {
        let (a, b) = (rng.random_range(3..97), rng.random_range(1..31));
        writeln!(
            s,
            "static inline long h{h}_mix{i}(long x)\n{{\n\tx ^= x >> {b};\n\tx *= {a};\n\treturn (x << H{h}_SHIFT) ^ (x & H{h}_MASK);\n}}\n"
        )
        .unwrap();
    }
    s.push_str("#endif\n");
    s
}

/// One .c file of `functions` functions plus `entry_<f>` calling them all.
/// The statements mimic kernel code (loops over arrays, switches, bit
/// twiddling, comments) so the compiler and compressors see realistic text.
pub fn generate_c_file(f: usize, functions: usize, seed: u64) -> String {
    let mut rng = ChaCha8Rng::seed_from_u64(seed.wrapping_mul(7_919).wrapping_add(f as u64 + 1));
    let mut s = format!("/*\n * f{f:04}.c: generated by sysdelta, do not edit.\n */\n\n");
    let hs: Vec<usize> = (0..3).map(|_| rng.random_range(0..HEADERS)).collect();
    for h in &hs {
        writeln!(s, "#include \"h{h}.h\"").unwrap();
    }
    s.push('\n');
    for i in 0..functions {
        let h = hs[i % hs.len()];
        let name = ident(&mut rng);
        writeln!(
            s,
            "/*\n * {name}() - {}.\n * {}.\n */",
            sentence(&mut rng),
            sentence(&mut rng)
        )
        .unwrap();
        writeln!(s, "static long f{f}_{name}_{i}(long seed)\n{{").unwrap();
        writeln!(
            s,
            "\tlong arr[{}];\n\tlong acc = seed;\n\tint i;\n",
            rng.random_range(8..64)
        )
        .unwrap();
        for _ in 0..rng.random_range(2..6) {
            match rng.random_range(0..4) {
                0 => {
                    let n = rng.random_range(4..8);
                    writeln!(
                        s,
                        "\tfor (i = 0; i < {n}; i++) {{\n\t\tarr[i] = h{h}_mix{}(acc + i);\n\t\tacc += arr[i] >> {};\n\t}}",
                        rng.random_range(0..4),
                        rng.random_range(1..9)
                    )
                    .unwrap();
                }
                1 => {
                    writeln!(s, "\tswitch (acc & 7) {{").unwrap();
                    for c in 0..rng.random_range(2..6) {
                        writeln!(
                            s,
                            "\tcase {c}:\n\t\tacc = (acc * {}) ^ H{h}_MASK;\n\t\tbreak;",
                            rng.random_range(3..1000)
                        )
                        .unwrap();
                    }
                    s.push_str("\tdefault:\n\t\tacc++;\n\t}\n");
                }
                2 => {
                    let field = word(&mut rng);
                    writeln!(
                        s,
                        "\tif (acc > {} && (acc & 0x{:x}))\n\t\tacc -= {}; /* {field} overflow */\n\telse\n\t\tacc += h{h}_mix{}(acc);",
                        rng.random_range(10..100_000),
                        rng.random::<u16>(),
                        rng.random_range(1..500),
                        rng.random_range(0..4)
                    )
                    .unwrap();
                }
                _ => {
                    writeln!(
                        s,
                        "\twhile (acc % {} != 0)\n\t\tacc = (acc >> 1) + {};",
                        rng.random_range(2..9),
                        rng.random_range(1..50)
                    )
                    .unwrap();
                }
            }
        }
        s.push_str("\treturn acc;\n}\n\n");
    }
    writeln!(s, "long entry_{f}(long seed)\n{{\n\tlong acc = seed;\n").unwrap();
    // Call every function (names taken from the text written above).
    s.push_str("\treturn acc");
    let names: Vec<String> = s
        .lines()
        .filter_map(|l| l.strip_prefix("static long "))
        .filter_map(|l| l.split('(').next().map(String::from))
        .collect();
    for n in &names {
        write!(s, " + {n}(seed)").unwrap();
    }
    s.push_str(";\n}\n");
    s
}

pub mod launch {
    //! Launching a workload's process under a RunContext: env and cwd, its
    //! own process group, CPU affinity (sched_setaffinity in the child before
    //! exec), the config's cgroup (the child writes "0" to cgroup.procs),
    //! timeout and cancel (SIGKILL to the whole group).

    use std::collections::VecDeque;
    use std::io::Read;
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    use std::process::{Command, ExitStatus, Stdio};
    use std::sync::atomic::Ordering;
    use std::sync::mpsc;
    use std::time::{Duration, Instant};

    use crate::workload::{RunContext, RunOutcome};

    const TAIL: usize = 4096;

    pub struct Done {
        pub status: ExitStatus,
        /// From just before spawn to the moment wait() returned.
        pub elapsed: Duration,
        pub stderr_tail: String,
    }

    impl Done {
        pub fn failure(&self, what: &str) -> RunOutcome {
            RunOutcome::Failed {
                reason: format!("{what} ({})", self.status),
                stderr_tail: self.stderr_tail.clone(),
                exit_code: self.status.code(),
            }
        }
    }

    pub fn failed(reason: &str) -> RunOutcome {
        RunOutcome::Failed {
            reason: reason.to_string(),
            stderr_tail: String::new(),
            exit_code: None,
        }
    }

    pub fn which(tool: &str) -> Option<std::path::PathBuf> {
        crate::config::kinds::check::which(tool)
    }

    /// Run `cmd` to completion under `ctx`. Err is the run's failed outcome
    /// (spawn error, timeout, cancel).
    pub fn run(cmd: Command, ctx: &RunContext) -> Result<Done, RunOutcome> {
        run_io(cmd, ctx, Stdio::null())
    }

    /// As [`run`], with the child's stdout going to `stdout`.
    pub fn run_io(mut cmd: Command, ctx: &RunContext, stdout: Stdio) -> Result<Done, RunOutcome> {
        cmd.envs(ctx.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(Stdio::piped());
        if let Some(cwd) = ctx.cwd {
            cmd.current_dir(cwd);
        }
        // Everything the child needs is prepared before fork: between fork
        // and exec only async-signal-safe calls, no allocation.
        let affinity = ctx.cpus.map(crate::sys::affinity::cpu_set);
        let cgroup = ctx
            .cgroup_procs
            .map(|p| std::ffi::CString::new(p.to_string_lossy().as_bytes()).unwrap_or_default());
        // SAFETY: only setpgid, sched_setaffinity, open, write, close.
        unsafe {
            cmd.pre_exec(move || {
                libc::setpgid(0, 0);
                if let Some(set) = &affinity {
                    crate::sys::affinity::set_affinity(0, set)?;
                }
                if let Some(path) = &cgroup {
                    let fd = libc::open(path.as_ptr(), libc::O_WRONLY);
                    if fd < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    let r = libc::write(fd, b"0".as_ptr().cast(), 1);
                    libc::close(fd);
                    if r != 1 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                Ok(())
            });
        }
        let program = format!("{:?}", cmd.get_program());
        let start = Instant::now();
        let mut child = cmd
            .spawn()
            .map_err(|e| failed(&format!("cannot start {program}: {e}")))?;
        let pid = child.id() as i32;
        let mut stderr = child.stderr.take().expect("piped stderr");
        let tail = std::thread::spawn(move || {
            let mut keep: VecDeque<u8> = VecDeque::with_capacity(TAIL);
            let mut buf = [0u8; 4096];
            while let Ok(n) = stderr.read(&mut buf) {
                if n == 0 {
                    break;
                }
                keep.extend(&buf[..n]);
                while keep.len() > TAIL {
                    keep.pop_front();
                }
            }
            String::from_utf8_lossy(&keep.into_iter().collect::<Vec<u8>>()).into_owned()
        });
        // A waiter thread blocks in wait() so the end time is taken the
        // moment the child exits, without polling delay.
        let (tx, rx) = mpsc::channel();
        let waiter = std::thread::spawn(move || {
            let st = child.wait();
            let _ = tx.send((st, start.elapsed()));
        });
        let deadline = start + ctx.timeout;
        let mut killed = None;
        let result = loop {
            match rx.recv_timeout(Duration::from_millis(20)) {
                Ok(r) => break Some(r),
                Err(mpsc::RecvTimeoutError::Disconnected) => break None,
                Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
            if killed.is_none() {
                if ctx.cancel.load(Ordering::SeqCst) {
                    killed = Some("cancelled");
                } else if Instant::now() >= deadline {
                    killed = Some("timed out");
                }
                if killed.is_some() {
                    // SAFETY: kill(2) on our child's own process group.
                    unsafe { libc::kill(-pid, libc::SIGKILL) };
                }
            }
        };
        let _ = waiter.join();
        // The group may still hold stderr open (grandchildren): kill it so
        // the tail reader finishes.
        // SAFETY: as above; ESRCH when the group is gone is fine.
        unsafe { libc::kill(-pid, libc::SIGKILL) };
        let stderr_tail = tail.join().unwrap_or_default();
        let Some((status, elapsed)) = result else {
            return Err(failed(&format!("lost track of {program}")));
        };
        let status = status.map_err(|e| failed(&format!("wait for {program}: {e}")))?;
        if let Some(why) = killed {
            return Err(RunOutcome::Failed {
                reason: format!("{program} {why} after {:.1} s", elapsed.as_secs_f64()),
                stderr_tail,
                exit_code: status.code().or(status.signal().map(|s| 128 + s)),
            });
        }
        Ok(Done {
            status,
            elapsed,
            stderr_tail,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generation_is_deterministic_and_parametrised() {
        assert_eq!(generate_c_file(3, 5, 1), generate_c_file(3, 5, 1));
        assert_ne!(generate_c_file(3, 5, 1), generate_c_file(3, 5, 2));
        let text = generate_c_file(0, 7, 1);
        assert_eq!(text.matches("static long ").count(), 7);
        assert!(text.contains("long entry_0(long seed)"));
    }

    #[test]
    fn bad_params_are_named() {
        let v: toml::Value = toml::from_str("files = 0").unwrap();
        let e = CompileWorkload::from_params(&v).err().unwrap();
        assert!(e.to_string().contains("compile.files"), "{e}");
        let v: toml::Value = toml::from_str("filez = 3").unwrap();
        let e = CompileWorkload::from_params(&v).err().unwrap();
        assert!(e.to_string().contains("unknown parameter `filez`"), "{e}");
    }
}
