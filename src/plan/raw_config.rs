//! How a `[[config]]` table is read into a [`RawConfig`]: its fixed keys,
//! and one key per built-in kind taken from `config::kinds::KINDS`, so the
//! registry is the only list of kinds. Written by hand where a derive
//! would need a field per kind, and kept to what the derive did: unknown
//! keys refused at their own position with the same "expected one of"
//! list (fixed keys, the kinds in registry order, `kernel`), a missing
//! `name` refused at the table, values' type errors at the value.

use std::fmt;
use std::sync::OnceLock;

use serde::de::{self, Deserialize, Deserializer, MapAccess, Visitor};

use super::raw::RawConfig;
use crate::config::kinds::KINDS;

/// The keys before the kinds, in the order messages list them.
const FIXED: &[&str] = &[
    "name", "matrix", "monitors", "setup", "teardown", "command", "env", "workdir",
];

/// Every key a `[[config]]` takes: the fixed ones, each kind, `kernel`.
fn keys() -> &'static [&'static str] {
    static KEYS: OnceLock<Vec<&'static str>> = OnceLock::new();
    KEYS.get_or_init(|| {
        let mut k = FIXED.to_vec();
        k.extend(KINDS.iter().map(|d| d.name));
        k.push("kernel");
        k
    })
}

/// One key of a `[[config]]`: `Fixed(i)` is `FIXED[i]`, `Kind(i)` is
/// `KINDS[i]`.
enum Key {
    Fixed(usize),
    Kind(usize),
    Kernel,
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("field identifier")
            }
            // Refused here, inside the key's deserializer, so that the
            // error carries the key's position.
            fn visit_str<E: de::Error>(self, k: &str) -> Result<Key, E> {
                if let Some(i) = FIXED.iter().position(|f| *f == k) {
                    Ok(Key::Fixed(i))
                } else if let Some(i) = KINDS.iter().position(|d| d.name == k) {
                    Ok(Key::Kind(i))
                } else if k == "kernel" {
                    Ok(Key::Kernel)
                } else {
                    Err(E::unknown_field(k, keys()))
                }
            }
        }
        d.deserialize_identifier(KeyVisitor)
    }
}

/// The value of a key given at most once.
fn once<'de, A: MapAccess<'de>, T: Deserialize<'de>>(
    map: &mut A,
    slot: &mut Option<T>,
    key: &'static str,
) -> Result<(), A::Error> {
    if slot.is_some() {
        return Err(de::Error::duplicate_field(key));
    }
    *slot = map.next_value::<Option<T>>()?;
    Ok(())
}

struct ConfigVisitor;

impl<'de> Visitor<'de> for ConfigVisitor {
    type Value = RawConfig;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("struct RawConfig")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawConfig, A::Error> {
        let (mut name, mut matrix, mut monitors, mut setup) = (None, None, None, None);
        let (mut teardown, mut env, mut workdir, mut kernel) = (None, None, None, None);
        let mut command = None;
        let mut kinds: Vec<(usize, _)> = Vec::new();
        while let Some(key) = map.next_key::<Key>()? {
            match key {
                Key::Fixed(0) => once(&mut map, &mut name, "name")?,
                Key::Fixed(1) => once(&mut map, &mut matrix, "matrix")?,
                Key::Fixed(2) => once(&mut map, &mut monitors, "monitors")?,
                Key::Fixed(3) => once(&mut map, &mut setup, "setup")?,
                Key::Fixed(4) => once(&mut map, &mut teardown, "teardown")?,
                Key::Fixed(5) => once(&mut map, &mut command, "command")?,
                Key::Fixed(6) => once(&mut map, &mut env, "env")?,
                // 7, the last of FIXED.
                Key::Fixed(_) => once(&mut map, &mut workdir, "workdir")?,
                Key::Kernel => once(&mut map, &mut kernel, "kernel")?,
                Key::Kind(i) => {
                    if kinds.iter().any(|(j, _)| *j == i) {
                        return Err(de::Error::duplicate_field(KINDS[i].name));
                    }
                    kinds.push((i, map.next_value()?));
                }
            }
        }
        kinds.sort_by_key(|(i, _)| *i);
        Ok(RawConfig {
            name: name.ok_or_else(|| de::Error::missing_field("name"))?,
            matrix,
            monitors,
            setup,
            teardown,
            command,
            env,
            workdir,
            kinds: kinds.into_iter().map(|(i, v)| (&KINDS[i], v)).collect(),
            kernel,
        })
    }
}

impl<'de> Deserialize<'de> for RawConfig {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_struct("RawConfig", keys(), ConfigVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<RawConfig, String> {
        toml::from_str::<RawConfig>(text).map_err(|e| e.message().to_string())
    }

    #[test]
    fn kinds_are_kept_in_the_registrys_order_whatever_the_plans() {
        let c = read("name = \"a\"\ncpus = \"0\"\n[ftrace]\nevents = [\"sched\"]\n").unwrap();
        let names: Vec<_> = c.kinds.iter().map(|(k, _)| k.name).collect();
        assert_eq!(names, ["ftrace", "cpus"]);
    }

    #[test]
    fn unknown_keys_list_every_key_and_name_is_required() {
        let e = read("name = \"a\"\ncolour = 1\n").err().unwrap();
        let want = format!(
            "unknown field `colour`, expected one of {}",
            keys()
                .iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        assert_eq!(e, want);
        assert!(want.contains("`workdir`, `ftrace`") && want.ends_with("`swap`, `kernel`"));
        assert_eq!(
            read("setup = \"x\"\n").err().unwrap(),
            "missing field `name`"
        );
    }
}
