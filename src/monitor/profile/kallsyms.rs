//! Kernel symbol lookup through /proc/kallsyms: text symbols sorted by
//! address; an address resolves to the nearest symbol at or below it.

/// Text symbols (types t/T, and W/w weak ones) sorted by address.
pub struct Kallsyms {
    syms: Vec<(u64, String)>,
}

impl Kallsyms {
    pub fn load() -> std::io::Result<Kallsyms> {
        Ok(Self::parse(&std::fs::read_to_string("/proc/kallsyms")?))
    }

    /// Parse kallsyms text ("ffffffff81000000 T _stext", modules add
    /// "\t[name]"). Zero addresses (hidden by kptr_restrict) are dropped.
    pub fn parse(text: &str) -> Kallsyms {
        let mut syms: Vec<(u64, String)> = text
            .lines()
            .filter_map(|l| {
                let mut it = l.split_ascii_whitespace();
                let addr = u64::from_str_radix(it.next()?, 16).ok()?;
                let typ = it.next()?;
                let name = it.next()?;
                let text_sym = matches!(typ, "t" | "T" | "w" | "W");
                (text_sym && addr != 0).then(|| {
                    let name = match it.next() {
                        Some(m) => format!("{name} {m}"),
                        None => name.to_string(),
                    };
                    (addr, name)
                })
            })
            .collect();
        syms.sort_by_key(|s| s.0);
        Kallsyms { syms }
    }

    pub fn is_empty(&self) -> bool {
        self.syms.is_empty()
    }

    /// The symbol containing `ip`, or None below the first symbol.
    pub fn resolve(&self, ip: u64) -> Option<&str> {
        let i = self.syms.partition_point(|s| s.0 <= ip);
        (i > 0).then(|| self.syms[i - 1].1.as_str())
    }
}
