//! `compress`: the 2002 LTT study's "Compress" column (bzip2 of a kernel
//! tarball), without downloading one. `prepare` writes a deterministic
//! corpus of generated C source (the compile workload's generator, so it
//! compresses like source code) of `size_mb` MiB; each run compresses it
//! with each tool in turn, output to a scratch file.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};

use super::compile::{generate_c_file, launch, param_table, param_usize};
use crate::error::Error;
use crate::metric::{Direction, MetricSpec};
use crate::workload::{MetricSamples, RunContext, RunOutcome, Workload};

const TOOLS: &[&str] = &["bzip2", "xz", "zstd", "gzip"];
const KEYS: &[&str] = &["size_mb", "tools", "level", "seed"];

pub struct CompressWorkload {
    size_mb: usize,
    tools: Vec<String>,
    level: Option<usize>,
    seed: u64,
    dir: Option<PathBuf>,
}

impl CompressWorkload {
    /// Parameters: `size_mb` (default 64), `tools` (["bzip2"]; any of bzip2,
    /// xz, zstd, gzip), `level` (the tool's default), `seed` (1).
    pub fn from_params(v: &toml::Value) -> Result<Self, Error> {
        let t = param_table("compress", v, KEYS)?;
        let tools = match t.get("tools") {
            None => vec!["bzip2".to_string()],
            Some(toml::Value::String(s)) => vec![s.clone()],
            Some(toml::Value::Array(a)) => a
                .iter()
                .map(|x| {
                    x.as_str().map(String::from).ok_or_else(|| {
                        Error::bad(format!("compress.tools must list tool names, found {x}"))
                    })
                })
                .collect::<Result<Vec<_>, _>>()?,
            Some(other) => {
                return Err(Error::bad(format!(
                    "compress.tools must be a list, not {other}"
                )))
            }
        };
        if tools.is_empty() {
            return Err(Error::bad("compress.tools is empty"));
        }
        for tool in &tools {
            if !TOOLS.contains(&tool.as_str()) {
                return Err(Error::bad(format!(
                    "compress: unknown tool `{tool}` (supported: {})",
                    TOOLS.join(", ")
                )));
            }
        }
        let level = match t.get("level") {
            None => None,
            Some(_) => Some(param_usize("compress", t, "level", 6, 1, 19)?),
        };
        Ok(CompressWorkload {
            size_mb: param_usize("compress", t, "size_mb", 64, 1, 1 << 20)?,
            tools,
            level,
            seed: param_usize("compress", t, "seed", 1, 0, usize::MAX)? as u64,
            dir: None,
        })
    }
}

/// Metric name of a tool's time, e.g. "bzip2_time".
fn metric(tool: &str) -> String {
    format!("{tool}_time")
}

/// Write the corpus: generated C files one after another, each preceded by
/// a header line naming it (like a tar of a source tree, less the padding).
pub fn write_corpus(path: &Path, bytes: u64, seed: u64) -> Result<()> {
    let f =
        std::fs::File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
    let mut w = std::io::BufWriter::new(f);
    let mut written = 0u64;
    let mut i = 0;
    while written < bytes {
        let text = format!("=== src/f{i:05}.c ===\n{}", generate_c_file(i, 12, seed));
        let take = text.len().min((bytes - written) as usize);
        w.write_all(&text.as_bytes()[..take])?;
        written += take as u64;
        i += 1;
    }
    w.flush()?;
    Ok(())
}

impl Workload for CompressWorkload {
    fn metrics(&self) -> Vec<MetricSpec> {
        self.tools
            .iter()
            .map(|t| MetricSpec::new(&metric(t), "s", Direction::Lower))
            .collect()
    }

    fn prepare(&mut self, scratch: &Path) -> Result<()> {
        for tool in &self.tools {
            if launch::which(tool).is_none() {
                bail!("compress: `{tool}` is not installed (not in PATH)");
            }
        }
        let dir = scratch.join("compress");
        std::fs::create_dir_all(&dir)?;
        write_corpus(
            &dir.join("corpus"),
            self.size_mb as u64 * 1024 * 1024,
            self.seed,
        )?;
        self.dir = Some(dir);
        Ok(())
    }

    /// One run: for each tool, `tool -c [-level] corpus > out`, timed from
    /// spawn to exit (reading the cached corpus and writing the output
    /// included). The output is deleted after each tool, untimed.
    fn run(&mut self, ctx: &RunContext) -> RunOutcome {
        let Some(dir) = &self.dir else {
            return launch::failed("compress: run before prepare");
        };
        let mut samples = Vec::new();
        for tool in &self.tools {
            let out_path = dir.join("out");
            let out = match std::fs::File::create(&out_path) {
                Ok(f) => f,
                Err(e) => return launch::failed(&format!("compress: cannot create output: {e}")),
            };
            let mut cmd = Command::new(tool);
            cmd.arg("-c");
            if let Some(l) = self.level {
                cmd.arg(format!("-{l}"));
            }
            if tool == "xz" || tool == "zstd" {
                // One thread, as bzip2 and gzip: the metric is CPU work.
                cmd.arg("-T1");
            }
            cmd.arg(dir.join("corpus"));
            let res = launch::run_io(cmd, ctx, Stdio::from(out));
            let _ = std::fs::remove_file(&out_path);
            match res {
                Ok(done) if done.status.success() => samples.push(MetricSamples {
                    metric: metric(tool),
                    values: vec![done.elapsed.as_secs_f64()],
                }),
                Ok(done) => return done.failure(&format!("compress: {tool} failed")),
                Err(o) => return o,
            }
        }
        RunOutcome::Ok(samples)
    }

    fn cleanup(&mut self) {
        if let Some(dir) = self.dir.take() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn corpus_is_deterministic_and_sized() {
        let d = tempfile::tempdir().unwrap();
        write_corpus(&d.path().join("a"), 100_000, 1).unwrap();
        write_corpus(&d.path().join("b"), 100_000, 1).unwrap();
        let a = std::fs::read(d.path().join("a")).unwrap();
        assert_eq!(a.len(), 100_000);
        assert_eq!(a, std::fs::read(d.path().join("b")).unwrap());
    }

    #[test]
    fn unknown_tool_is_named() {
        let v: toml::Value = toml::from_str("tools = [\"lzma9\"]").unwrap();
        let e = CompressWorkload::from_params(&v).err().unwrap();
        assert!(e.to_string().contains("unknown tool `lzma9`"), "{e}");
    }
}
