//! `cpus`: restrict the workload to a CPU list (UP vs SMP, as the 2002 LTT
//! study ran LMbench on one CPU). Changes nothing on the system: the runner
//! applies the list to each workload process (sched_setaffinity before exec).

use anyhow::Result;

use crate::config::kind::{ConfigKind, LaunchMods};
use crate::error::Error;

pub struct Cpus {
    cpus: Vec<usize>,
}

/// CPU numbers go up to this (the largest NR_CPUS any architecture
/// allows is 8192), so a range cannot ask for billions of entries.
pub const MAX_CPU: usize = 8191;

/// Parse "0-2,5" into [0, 1, 2, 5].
pub fn parse_list(s: &str) -> Result<Vec<usize>, Error> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let bad = || {
            Error::bad(format!(
                "cpus: `{part}` is not a CPU number or range like 0-3"
            ))
        };
        match part.split_once('-') {
            Some((a, b)) => {
                let a: usize = a.trim().parse().map_err(|_| bad())?;
                let b: usize = b.trim().parse().map_err(|_| bad())?;
                if a > b {
                    return Err(bad());
                }
                if b > MAX_CPU {
                    return Err(too_high(b));
                }
                out.extend(a..=b);
            }
            None => match part.parse().map_err(|_| bad())? {
                c if c > MAX_CPU => return Err(too_high(c)),
                c => out.push(c),
            },
        }
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

fn too_high(cpu: usize) -> Error {
    Error::bad(format!(
        "cpus: CPU {cpu} is above {MAX_CPU}, the most any kernel has"
    ))
}

/// The CPUs this machine has online.
pub fn online() -> Vec<usize> {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|s| parse_list(s.trim()).ok())
        .unwrap_or_default()
}

impl Cpus {
    pub fn from_value(v: &toml::Value) -> Result<Cpus, Error> {
        let cpus = match v {
            toml::Value::String(s) => parse_list(s)?,
            toml::Value::Integer(i) if *i >= 0 => parse_list(&i.to_string())?,
            toml::Value::Array(a) => {
                let mut c = a
                    .iter()
                    .map(|x| match x.as_integer() {
                        Some(i) if (0..=MAX_CPU as i64).contains(&i) => Ok(i as usize),
                        Some(i) if i > MAX_CPU as i64 => Err(too_high(i as usize)),
                        _ => Err(Error::bad(format!("cpus: `{x}` is not a CPU number"))),
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                c.sort_unstable();
                c.dedup();
                c
            }
            other => {
                return Err(Error::bad(format!(
                    "cpus must be a list like \"0-1,3\" or [0, 1], not {other}"
                )))
            }
        };
        if cpus.is_empty() {
            return Err(Error::bad("cpus is empty: name at least one CPU"));
        }
        Ok(Cpus { cpus })
    }
}

impl ConfigKind for Cpus {
    fn changes_system(&self) -> bool {
        false
    }

    fn kind(&self) -> &'static str {
        "cpus"
    }

    fn preflight(&self) -> Vec<String> {
        let on = online();
        let missing: Vec<String> = self
            .cpus
            .iter()
            .filter(|c| !on.contains(c))
            .map(|c| c.to_string())
            .collect();
        if missing.is_empty() {
            Vec::new()
        } else {
            vec![format!(
                "cpus: CPU {} not online (online: {})",
                missing.join(","),
                on.iter()
                    .map(|c| c.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            )]
        }
    }

    fn enter(&mut self) -> Result<LaunchMods> {
        Ok(LaunchMods {
            cpus: Some(self.cpus.clone()),
            ..LaunchMods::default()
        })
    }

    fn leave(&mut self) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_lists_and_ranges() {
        assert_eq!(parse_list("0-2,5").unwrap(), vec![0, 1, 2, 5]);
        assert_eq!(parse_list("1").unwrap(), vec![1]);
        assert!(parse_list("3-1").is_err());
        assert!(parse_list("x").unwrap_err().to_string().contains("`x`"));
        assert_eq!(parse_list("8190-8191").unwrap(), vec![8190, 8191]);
        let c = Cpus::from_value(&toml::Value::Array(vec![toml::Value::Integer(0)])).unwrap();
        assert_eq!(c.cpus, vec![0]);
    }

    #[test]
    fn numbers_above_any_kernels_cpus_are_refused_before_allocating() {
        for s in ["0-1000000000000", "8192", "0-18446744073709551615"] {
            let e = parse_list(s).unwrap_err();
            assert!(e.to_string().contains("above 8191"), "{s}: {e}");
        }
        let e = Cpus::from_value(&toml::Value::Integer(1 << 40))
            .err()
            .unwrap();
        assert!(e.to_string().contains("above 8191"), "{e}");
        let big = toml::Value::Array(vec![toml::Value::Integer(0), toml::Value::Integer(9000)]);
        assert!(Cpus::from_value(&big)
            .err()
            .unwrap()
            .to_string()
            .contains("above 8191"));
        let neg = toml::Value::Array(vec![toml::Value::Integer(-1)]);
        assert!(Cpus::from_value(&neg)
            .err()
            .unwrap()
            .to_string()
            .contains("not a CPU number"));
    }

    #[test]
    fn offline_cpu_is_a_preflight_line() {
        let c = Cpus::from_value(&toml::Value::String("4095".into())).unwrap();
        let p = c.preflight();
        assert_eq!(p.len(), 1);
        assert!(p[0].contains("4095"), "{}", p[0]);
    }
}
