//! Parameter scans, as hyperfine's `-P NAME MIN MAX [-D STEP]` and
//! `-L NAME a,b,c`: the values of one parameter, and text with `{NAME}`
//! placeholders expanded over them. `ab` uses it for its command (one
//! workload per value) or its configs' setups (one config per value); a
//! plan's `matrix` key for its workloads and configs.

use crate::error::Error;

/// The most values one scan may give: each is a workload or a config.
pub const MAX_SCAN_VALUES: usize = 1000;

/// One parameter and its values, as text (as they are put into commands).
#[derive(Clone, Debug, PartialEq)]
pub struct Scan {
    pub param: String,
    pub values: Vec<String>,
}

impl Scan {
    /// `{NAME}`.
    pub fn placeholder(&self) -> String {
        format!("{{{}}}", self.param)
    }

    /// Whether `text` holds this scan's placeholder.
    pub fn appears_in(&self, text: &str) -> bool {
        text.contains(&self.placeholder())
    }

    /// `text` with the placeholder replaced by `value`.
    pub fn fill(&self, text: &str, value: &str) -> String {
        text.replace(&self.placeholder(), value)
    }

    /// The name of the item `value` gives: `name` with the placeholder
    /// filled in, or `name-value` when it has none (names stay distinct).
    pub fn name(&self, name: &str, value: &str) -> String {
        if self.appears_in(name) {
            self.fill(name, value)
        } else {
            format!("{name}-{value}")
        }
    }
}

fn check_param(what: &str, name: &str) -> Result<(), Error> {
    if name.is_empty() || !name.chars().all(|c| c.is_alphanumeric() || c == '_') {
        return Err(Error::bad(format!(
            "{what} '{name}': a parameter name is letters, digits and _"
        )));
    }
    Ok(())
}

/// Decimal places written in a number as given ("0.25" -> 2).
fn decimals(s: &str) -> usize {
    s.split_once('.').map_or(0, |(_, f)| f.len())
}

/// `-P NAME MIN MAX [-D STEP]`: MIN, MIN+STEP, ... up to MAX. Without a
/// step the bounds are integers and the step is 1 (as hyperfine); values
/// are written with as many decimals as the bounds and the step have.
pub fn range(name: &str, min: &str, max: &str, step: Option<&str>) -> Result<Scan, Error> {
    check_param("-P", name)?;
    // Plain decimals only: the values are written with as many decimals as
    // the bounds and step have, which `1e-1` would not say.
    let num = |s: &str| -> Result<f64, Error> {
        if s.contains(['e', 'E']) {
            return Err(Error::bad(format!(
                "-P {name}: '{s}': write it as a plain decimal (0.1, not 1e-1)"
            )));
        }
        s.trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .ok_or_else(|| Error::bad(format!("-P {name}: '{s}' is not a number")))
    };
    let (lo, hi) = (num(min)?, num(max)?);
    let st = match step {
        Some(s) => num(s)?,
        None => {
            if decimals(min) + decimals(max) > 0 {
                return Err(Error::bad(format!(
                    "-P {name} {min} {max}: bounds with decimals need a step (-D)"
                )));
            }
            1.0
        }
    };
    if st <= 0.0 {
        return Err(Error::bad(format!(
            "-D: the step must be above 0, got {st}"
        )));
    }
    if hi < lo {
        return Err(Error::bad(format!(
            "-P {name} {min} {max}: MAX is below MIN"
        )));
    }
    let places = decimals(min)
        .max(decimals(max))
        .max(step.map_or(0, decimals));
    let count = ((hi - lo) / st + 1e-9).floor() + 1.0;
    if count > MAX_SCAN_VALUES as f64 {
        return Err(Error::bad(format!(
            "-P {name} {min} {max}: {count} values, at most {MAX_SCAN_VALUES}"
        )));
    }
    let values = (0..count as usize)
        .map(|i| format!("{:.*}", places, lo + i as f64 * st))
        .collect();
    Ok(Scan {
        param: name.to_string(),
        values,
    })
}

/// `-L NAME a,b,c`.
pub fn list(name: &str, values: &str) -> Result<Scan, Error> {
    check_param("-L", name)?;
    let values: Vec<String> = values.split(',').map(str::to_string).collect();
    if values.iter().any(|v| v.is_empty()) {
        return Err(Error::bad(format!("-L {name}: an empty value in the list")));
    }
    if values.len() > MAX_SCAN_VALUES {
        return Err(Error::bad(format!(
            "-L {name}: {} values, at most {MAX_SCAN_VALUES}",
            values.len()
        )));
    }
    for (i, v) in values.iter().enumerate() {
        if values[..i].contains(v) {
            return Err(Error::bad(format!("-L {name}: '{v}' is listed twice")));
        }
    }
    Ok(Scan {
        param: name.to_string(),
        values,
    })
}

/// Several scans at once, as hyperfine's repeated `-L`/`-P`: their cross
/// product, one point (a value of each scan) per item.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Grid {
    pub scans: Vec<Scan>,
}

/// One point of a [`Grid`]: (parameter, value) for each of its scans.
pub type Point = Vec<(String, String)>;

impl Grid {
    /// The scans, checked: distinct names, and at most
    /// [`MAX_SCAN_VALUES`] points in all.
    pub fn new(scans: Vec<Scan>) -> Result<Grid, Error> {
        for (i, s) in scans.iter().enumerate() {
            if scans[..i].iter().any(|o| o.param == s.param) {
                return Err(Error::bad(format!(
                    "parameter '{}' is scanned twice (-P/-L)",
                    s.param
                )));
            }
        }
        let points = scans
            .iter()
            .try_fold(1usize, |n, s| n.checked_mul(s.values.len()));
        match points {
            Some(n) if n <= MAX_SCAN_VALUES => Ok(Grid { scans }),
            _ => Err(Error::bad(format!(
                "-P/-L: the scans' cross product has more than {MAX_SCAN_VALUES} combinations"
            ))),
        }
    }

    /// The sub-grid of the scans whose placeholder `keep` says yes to.
    pub fn only(&self, keep: impl Fn(&Scan) -> bool) -> Grid {
        Grid {
            scans: self.scans.iter().filter(|s| keep(s)).cloned().collect(),
        }
    }

    /// Every combination of values, the first scan varying slowest (as
    /// hyperfine orders them); one empty point when there is no scan.
    pub fn points(&self) -> Vec<Point> {
        let mut out: Vec<Point> = vec![Vec::new()];
        for s in &self.scans {
            out = out
                .into_iter()
                .flat_map(|p| {
                    s.values.iter().map(move |v| {
                        let mut q = p.clone();
                        q.push((s.param.clone(), v.clone()));
                        q
                    })
                })
                .collect();
        }
        out
    }

    /// Whether `text` holds any of the scans' placeholders.
    pub fn appears_in(&self, text: &str) -> bool {
        self.scans.iter().any(|s| s.appears_in(text))
    }

    /// `text` with each placeholder of `point` filled.
    pub fn fill(text: &str, point: &Point) -> String {
        point.iter().fold(text.to_string(), |t, (k, v)| {
            t.replace(&format!("{{{k}}}"), v)
        })
    }

    /// The name of the item `point` gives: `name` with its placeholders
    /// filled and `-VALUE` appended for each scan it has none of.
    pub fn name(name: &str, point: &Point) -> String {
        let mut out = Grid::fill(name, point);
        for (k, v) in point {
            if !name.contains(&format!("{{{k}}}")) {
                out = format!("{out}-{v}");
            }
        }
        out
    }
}

/// The first `{NAME}` in `text` (NAME letters, digits and _, not after a
/// `$`, so `${HOME}` is the shell's) that no scan in `params` fills: run
/// as written it would be a literal `{NAME}`, never what was meant.
pub fn unfilled(text: &str, params: &[&str]) -> Option<String> {
    let b = text.as_bytes();
    let mut i = 0;
    while let Some(open) = text[i..].find('{').map(|o| o + i) {
        i = open + 1;
        let Some(len) = text[i..].find('}') else {
            break;
        };
        let name = &text[i..i + len];
        let word = !name.is_empty()
            && name.chars().all(|c| c.is_alphanumeric() || c == '_')
            && !name.starts_with(|c: char| c.is_ascii_digit());
        if word && (open == 0 || b[open - 1] != b'$') && !params.contains(&name) {
            return Some(format!("{{{name}}}"));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_and_lists_give_their_values() {
        assert_eq!(range("n", "1", "3", None).unwrap().values, ["1", "2", "3"]);
        assert_eq!(
            range("t", "0.1", "0.3", Some("0.1")).unwrap().values,
            ["0.1", "0.2", "0.3"]
        );
        assert_eq!(
            range("n", "0", "10", Some("4")).unwrap().values,
            ["0", "4", "8"]
        );
        assert!(range("n", "3", "1", None).is_err());
        assert!(range("n", "0.5", "1", None).is_err());
        assert!(range("n", "1", "2", Some("0")).is_err());
        assert!(range("n x", "1", "2", None).is_err());
        assert!(range("n", "0", "5000", None).is_err());
        // An exponent would print every value with 0 decimals.
        assert!(range("n", "0", "1", Some("1e-1")).is_err());
        assert_eq!(list("m", "a,b").unwrap().values, ["a", "b"]);
        assert!(list("m", "a,,b").is_err());
        assert!(list("m", "a,a").is_err());
        let s = list("m", "x").unwrap();
        assert_eq!(s.fill("echo {m} {m}", "x"), "echo x x");
        assert_eq!(s.name("w-{m}", "x"), "w-x");
        assert_eq!(s.name("w", "x"), "w-x");
    }

    #[test]
    fn several_scans_give_their_cross_product() {
        let g = Grid::new(vec![list("a", "x,y").unwrap(), list("b", "1,2").unwrap()]).unwrap();
        let filled: Vec<String> = g.points().iter().map(|p| Grid::fill("{a}{b}", p)).collect();
        assert_eq!(filled, ["x1", "x2", "y1", "y2"]);
        let p = &g.points()[1];
        assert_eq!(Grid::name("w-{a}", p), "w-x-2");
        assert!(Grid::new(vec![list("a", "x").unwrap(), list("a", "y").unwrap()]).is_err());
        let big = range("n", "1", "100", None).unwrap();
        assert!(Grid::new(vec![big.clone(), big]).is_err());
        assert_eq!(Grid::default().points(), vec![Vec::new()]);
    }

    #[test]
    fn a_placeholder_no_scan_fills_is_found() {
        assert_eq!(unfilled("echo {a}{b}", &["a"]).as_deref(), Some("{b}"));
        assert_eq!(unfilled("echo {a}", &["a"]), None);
        // The shell's own braces are not placeholders.
        for shell in [
            "echo ${HOME}",
            "awk '{print $1}' f",
            "echo {a,b}",
            "find . -exec rm {} +",
            "f() { true; }",
            "echo {1}",
        ] {
            assert_eq!(unfilled(shell, &[]), None, "{shell}");
        }
    }
}
