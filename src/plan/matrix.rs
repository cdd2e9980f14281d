//! A plan's `matrix` key: `matrix = { n = [1, 2, 4] }` on a workload or a
//! config makes one item per value, with `{n}` in its name, command,
//! setup, teardown, a config's command, params, env, kernel and every config kind's value replaced by the value (the
//! name gets `-VALUE` appended when it has no placeholder), as `ab`'s
//! `-P`/`-L` do on the command line.

use toml::Spanned;

use super::position::Origin;
use super::raw::{RawConfig, RawWorkload};
use super::scan::{Scan, MAX_SCAN_VALUES};
use crate::error::Error;

/// The scan a `matrix` table asks for: one key, an array of strings or
/// numbers.
fn scan_of(origin: &Origin, m: &Spanned<toml::Table>) -> Result<Scan, Error> {
    let at = m.span().start;
    let mut it = m.get_ref().iter();
    let (Some((param, values)), None) = (it.next(), it.next()) else {
        return Err(origin.bad_at(
            at,
            "matrix takes one parameter, e.g. matrix = { n = [1, 2, 4] }",
        ));
    };
    let bad = |why: &str| origin.bad_at(at, format!("matrix parameter `{param}`: {why}"));
    if param.is_empty() || !param.chars().all(|c| c.is_alphanumeric() || c == '_') {
        return Err(bad("a name is letters, digits and _"));
    }
    let Some(values) = values.as_array() else {
        return Err(bad("expected an array of values"));
    };
    let mut out: Vec<String> = Vec::new();
    for v in values {
        let s = match v {
            toml::Value::String(s) => s.clone(),
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Float(f) => f.to_string(),
            _ => return Err(bad("values are strings or numbers")),
        };
        if s.is_empty() || out.contains(&s) {
            return Err(bad(&format!("value '{s}' is empty or given twice")));
        }
        out.push(s);
    }
    if out.is_empty() || out.len() > MAX_SCAN_VALUES {
        return Err(bad(&format!("1 to {MAX_SCAN_VALUES} values")));
    }
    Ok(Scan {
        param: param.clone(),
        values: out,
    })
}

fn fill_str(s: &Scan, v: &str, x: &Spanned<String>) -> Spanned<String> {
    Spanned::new(x.span(), s.fill(x.get_ref(), v))
}

/// Every string inside a TOML value, filled.
fn fill_value(s: &Scan, v: &str, x: &toml::Value) -> toml::Value {
    match x {
        toml::Value::String(t) => toml::Value::String(s.fill(t, v)),
        toml::Value::Array(a) => {
            toml::Value::Array(a.iter().map(|e| fill_value(s, v, e)).collect())
        }
        toml::Value::Table(t) => toml::Value::Table(
            t.iter()
                .map(|(k, e)| (s.fill(k, v), fill_value(s, v, e)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn fill_spanned(
    s: &Scan,
    v: &str,
    x: &Option<Spanned<toml::Value>>,
) -> Option<Spanned<toml::Value>> {
    x.as_ref()
        .map(|x| Spanned::new(x.span(), fill_value(s, v, x.get_ref())))
}

/// The plan's workloads with each `matrix` expanded in place.
pub(super) fn workloads(
    origin: &Origin,
    ws: Vec<Spanned<RawWorkload>>,
) -> Result<Vec<Spanned<RawWorkload>>, Error> {
    let mut out = Vec::new();
    for w in ws {
        let Some(m) = &w.get_ref().matrix else {
            out.push(w);
            continue;
        };
        let s = scan_of(origin, m)?;
        let span = w.span();
        for v in &s.values {
            let mut x = w.get_ref().clone();
            x.matrix = None;
            x.name = Spanned::new(x.name.span(), s.name(x.name.get_ref(), v));
            x.command = x.command.as_ref().map(|c| fill_str(&s, v, c));
            x.params = fill_spanned(&s, v, &x.params);
            x.quick = fill_spanned(&s, v, &x.quick);
            x.workdir = x.workdir.as_ref().map(|c| fill_str(&s, v, c));
            // What runs around each run follows its value too.
            x.prepare = x.prepare.as_ref().map(|c| fill_str(&s, v, c));
            x.conclude = x.conclude.as_ref().map(|c| fill_str(&s, v, c));
            out.push(Spanned::new(span.clone(), x));
        }
    }
    Ok(out)
}

/// The plan's configs with each `matrix` expanded in place.
pub(super) fn configs(
    origin: &Origin,
    cs: Vec<Spanned<RawConfig>>,
) -> Result<Vec<Spanned<RawConfig>>, Error> {
    let mut out = Vec::new();
    for c in cs {
        let Some(m) = &c.get_ref().matrix else {
            out.push(c);
            continue;
        };
        let s = scan_of(origin, m)?;
        let span = c.span();
        for v in &s.values {
            let mut x = c.get_ref().clone();
            x.matrix = None;
            x.name = Spanned::new(x.name.span(), s.name(x.name.get_ref(), v));
            x.setup = x.setup.as_ref().map(|t| fill_str(&s, v, t));
            x.teardown = x.teardown.as_ref().map(|t| fill_str(&s, v, t));
            x.command = x.command.as_ref().map(|t| fill_str(&s, v, t));
            x.workdir = x.workdir.as_ref().map(|t| fill_str(&s, v, t));
            x.env = x.env.as_ref().map(|e| {
                e.iter()
                    .map(|(k, e)| {
                        (
                            k.clone(),
                            Spanned::new(e.span(), fill_value(&s, v, e.get_ref())),
                        )
                    })
                    .collect()
            });
            // Every kind the config declares, whichever: they are one list.
            for (_, t) in &mut x.kinds {
                *t = Spanned::new(t.span(), fill_value(&s, v, t.get_ref()));
            }
            x.kernel = fill_spanned(&s, v, &x.kernel);
            out.push(Spanned::new(span.clone(), x));
        }
    }
    Ok(out)
}
