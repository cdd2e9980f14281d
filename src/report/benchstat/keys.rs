//! The keys benchstat projects a result by, for one (workload, config,
//! metric) of a report: `.name` (the benchmark's base name), `.fullname`
//! (its whole name), `.config` (benchstat's `.file`: sysdelta's config,
//! one per imported file), `.unit` (the metric), `/KEY` (a sub-name key:
//! `format` of `Encode/format=json-8`, `gomaxprocs` of its `-8`) and `KEY`
//! (a file-level key the Go importer wrote after the name:
//! `Foo-8 [pkg=example.com/a goos=linux]`).

/// One item's keys.
pub struct Keys<'a> {
    /// The workload's name without its `[...]` file-level keys.
    pub fullname: &'a str,
    /// The file-level keys, as (key, value).
    pub file_keys: Vec<(&'a str, &'a str)>,
    pub config: &'a str,
    pub unit: &'a str,
}

impl<'a> Keys<'a> {
    pub fn new(workload: &'a str, config: &'a str, unit: &'a str) -> Keys<'a> {
        let (fullname, file_keys) =
            match workload.strip_suffix(']').and_then(|w| w.rsplit_once(" [")) {
                Some((name, keys)) => (
                    name,
                    keys.split(' ')
                        .filter_map(|kv| kv.split_once('='))
                        .collect(),
                ),
                None => (workload, Vec::new()),
            };
        Keys {
            fullname,
            file_keys,
            config,
            unit,
        }
    }

    /// The benchmark's name split as benchstat splits it: the base name,
    /// and its `/key=value` parts (an unnamed part is keyed by its
    /// position, as benchstat's `/N`), then `gomaxprocs` from a `-N`
    /// suffix.
    fn parts(&self) -> (&'a str, Vec<(String, &'a str)>) {
        let (name, procs) = match self.fullname.rsplit_once('-') {
            Some((n, p)) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => (n, Some(p)),
            _ => (self.fullname, None),
        };
        let mut it = name.split('/');
        let base = it.next().unwrap_or(name);
        let mut parts: Vec<(String, &str)> = it
            .enumerate()
            .map(|(i, p)| match p.split_once('=') {
                Some((k, v)) => (k.to_string(), v),
                None => ((i + 1).to_string(), p),
            })
            .collect();
        if let Some(p) = procs {
            parts.push(("gomaxprocs".into(), p));
        }
        (base, parts)
    }

    /// The value of `key`, None when the item has no such key.
    pub fn get(&self, key: &str) -> Option<String> {
        match key {
            ".name" => Some(self.parts().0.to_string()),
            ".fullname" => Some(self.fullname.to_string()),
            ".config" | ".file" => Some(self.config.to_string()),
            ".unit" => Some(self.unit.to_string()),
            _ => match key.strip_prefix('/') {
                Some(k) => self
                    .parts()
                    .1
                    .into_iter()
                    .find(|(n, _)| n == k)
                    .map(|(_, v)| v.to_string()),
                None => self
                    .file_keys
                    .iter()
                    .find(|(k, _)| *k == key)
                    .map(|(_, v)| v.to_string()),
            },
        }
    }

    /// The file-level keys' names, in the workload name's order.
    pub fn file_key_names(&self) -> impl Iterator<Item = &'a str> + '_ {
        self.file_keys.iter().map(|(k, _)| *k)
    }
}

/// `KEYS` of `--row`/`--col`: comma- or space-separated key names, each
/// one of the forms above.
pub fn parse_list(flag: &str, text: &str) -> anyhow::Result<Vec<String>> {
    let keys: Vec<String> = text
        .split([',', ' '])
        .filter(|k| !k.is_empty())
        .map(str::to_string)
        .collect();
    if keys.is_empty() {
        return Err(crate::error::bad(format!("{flag} '{text}': no key given")));
    }
    for k in &keys {
        let known = [".name", ".fullname", ".config", ".file", ".unit"];
        if k.starts_with('.') && !known.contains(&k.as_str()) {
            return Err(crate::error::bad(format!(
                "{flag}: unknown key '{k}' (keys: {}, /SUBNAME-KEY, FILE-KEY)",
                known.join(", ")
            )));
        }
    }
    Ok(keys)
}

#[cfg(test)]
mod tests {
    use super::Keys;

    #[test]
    fn a_go_benchmarks_keys() {
        let k = Keys::new(
            "Encode/format=json/8k-48 [pkg=a/b goos=linux]",
            "old",
            "sec/op",
        );
        assert_eq!(k.get(".name").as_deref(), Some("Encode"));
        assert_eq!(
            k.get(".fullname").as_deref(),
            Some("Encode/format=json/8k-48")
        );
        assert_eq!(k.get("/format").as_deref(), Some("json"));
        assert_eq!(k.get("/2").as_deref(), Some("8k"));
        assert_eq!(k.get("/gomaxprocs").as_deref(), Some("48"));
        assert_eq!(k.get("pkg").as_deref(), Some("a/b"));
        assert_eq!(k.get(".file").as_deref(), Some("old"));
        assert_eq!(k.get("cpu"), None);
    }
}
