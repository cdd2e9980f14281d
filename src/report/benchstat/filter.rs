//! benchstat's `-filter` expressions (golang.org/x/perf/cmd/benchstat's
//! doc): `key:value`, `key:"quoted value"`, `key:/regexp/`,
//! `key:(v1 OR v2)`, `*`; terms side by side (or with `AND`) must all
//! match, `OR` takes either, `-x` negates, parentheses group.

use regex::Regex;

use anyhow::Result;

use crate::error::bad;

/// A parsed filter.
#[derive(Debug)]
pub enum Filter {
    All,
    Term(String, Vec<Value>),
    Not(Box<Filter>),
    And(Vec<Filter>),
    Or(Vec<Filter>),
}

/// One value a term accepts.
#[derive(Debug)]
pub enum Value {
    Exact(String),
    Pattern(Regex),
}

impl Filter {
    /// Whether an item whose keys `key` looks up matches (a key the item
    /// does not have matches no value).
    pub fn matches(&self, key: &dyn Fn(&str) -> Option<String>) -> bool {
        match self {
            Filter::All => true,
            Filter::Term(k, vs) => key(k).is_some_and(|v| {
                vs.iter().any(|x| match x {
                    Value::Exact(s) => *s == v,
                    Value::Pattern(r) => r.is_match(&v),
                })
            }),
            Filter::Not(f) => !f.matches(key),
            Filter::And(fs) => fs.iter().all(|f| f.matches(key)),
            Filter::Or(fs) => fs.iter().any(|f| f.matches(key)),
        }
    }
}

/// Parse `text`; an error names the column where it stopped making sense.
pub fn parse(text: &str) -> Result<Filter> {
    let mut p = Parser {
        s: text.chars().collect(),
        i: 0,
    };
    let f = p.or()?;
    p.space();
    if p.i < p.s.len() {
        return Err(p.fail("unexpected text"));
    }
    Ok(f)
}

struct Parser {
    s: Vec<char>,
    i: usize,
}

impl Parser {
    fn fail(&self, what: &str) -> anyhow::Error {
        let text: String = self.s.iter().collect();
        bad(format!(
            "--filter '{text}': {what} at column {}",
            self.i + 1
        ))
    }

    fn space(&mut self) {
        while self.s.get(self.i).is_some_and(|c| c.is_whitespace()) {
            self.i += 1;
        }
    }

    fn peek(&self) -> Option<char> {
        self.s.get(self.i).copied()
    }

    /// Whether the word `w` stands next (followed by a space, `(` or the end).
    fn at_word(&self, w: &str) -> bool {
        let n = w.chars().count();
        let here: String = self.s.iter().skip(self.i).take(n).collect();
        here == w
            && self
                .s
                .get(self.i + n)
                .is_none_or(|c| c.is_whitespace() || *c == '(')
    }

    fn or(&mut self) -> Result<Filter> {
        let mut alts = vec![self.and()?];
        loop {
            self.space();
            if !self.at_word("OR") {
                break;
            }
            self.i += 2;
            alts.push(self.and()?);
        }
        Ok(if alts.len() == 1 {
            alts.pop().unwrap()
        } else {
            Filter::Or(alts)
        })
    }

    fn and(&mut self) -> Result<Filter> {
        let mut all = Vec::new();
        loop {
            self.space();
            match self.peek() {
                None | Some(')') => break,
                _ if self.at_word("OR") => break,
                _ if self.at_word("AND") => self.i += 3,
                _ => all.push(self.unary()?),
            }
        }
        match all.len() {
            0 => Err(self.fail("a term is missing")),
            1 => Ok(all.pop().unwrap()),
            _ => Ok(Filter::And(all)),
        }
    }

    fn unary(&mut self) -> Result<Filter> {
        self.space();
        match self.peek() {
            Some('-') => {
                self.i += 1;
                Ok(Filter::Not(Box::new(self.unary()?)))
            }
            Some('(') => {
                self.i += 1;
                let f = self.or()?;
                self.space();
                if self.peek() != Some(')') {
                    return Err(self.fail("')' is missing"));
                }
                self.i += 1;
                Ok(f)
            }
            Some('*') => {
                self.i += 1;
                Ok(Filter::All)
            }
            _ => self.term(),
        }
    }

    fn term(&mut self) -> Result<Filter> {
        let key = if self.peek() == Some('"') {
            self.quoted()?
        } else {
            self.word(|c| c == ':' || c == '(' || c == ')')
        };
        if key.is_empty() || self.peek() != Some(':') {
            return Err(self.fail("expected key:value"));
        }
        self.i += 1;
        let values = if self.peek() == Some('(') {
            self.i += 1;
            let mut vs = vec![self.value()?];
            loop {
                self.space();
                if self.peek() == Some(')') {
                    self.i += 1;
                    break;
                }
                if !self.at_word("OR") {
                    return Err(self.fail("expected OR or ')'"));
                }
                self.i += 2;
                self.space();
                vs.push(self.value()?);
            }
            vs
        } else {
            vec![self.value()?]
        };
        Ok(Filter::Term(key, values))
    }

    fn value(&mut self) -> Result<Value> {
        match self.peek() {
            Some('"') => Ok(Value::Exact(self.quoted()?)),
            Some('/') => {
                self.i += 1;
                let start = self.i;
                while self.peek().is_some_and(|c| c != '/') {
                    // A `\/` stays in the pattern, escaped.
                    self.i += if self.peek() == Some('\\') { 2 } else { 1 };
                }
                if self.i >= self.s.len() {
                    return Err(self.fail("the regexp's closing '/' is missing"));
                }
                let pat: String = self.s[start..self.i].iter().collect();
                self.i += 1;
                // benchstat's regexps match anywhere unless anchored, as Go's.
                Regex::new(&pat)
                    .map(Value::Pattern)
                    .map_err(|e| self.fail(&format!("bad regexp /{pat}/ ({e})")))
            }
            _ => {
                let w = self.word(|c| c == '(' || c == ')');
                if w.is_empty() {
                    return Err(self.fail("a value is missing"));
                }
                Ok(Value::Exact(w))
            }
        }
    }

    /// Characters up to a space, the end, or one `stop` accepts.
    fn word(&mut self, stop: impl Fn(char) -> bool) -> String {
        let start = self.i;
        while self.peek().is_some_and(|c| !c.is_whitespace() && !stop(c)) {
            self.i += 1;
        }
        self.s[start..self.i].iter().collect()
    }

    /// A double-quoted string with `\"` and `\\` escapes.
    fn quoted(&mut self) -> Result<String> {
        self.i += 1;
        let mut out = String::new();
        loop {
            match self.peek() {
                None => return Err(self.fail("the closing '\"' is missing")),
                Some('"') => {
                    self.i += 1;
                    return Ok(out);
                }
                Some('\\') if self.s.get(self.i + 1).is_some() => {
                    out.push(self.s[self.i + 1]);
                    self.i += 2;
                }
                Some(c) => {
                    out.push(c);
                    self.i += 1;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parse;

    fn keys(k: &str) -> Option<String> {
        match k {
            ".name" => Some("Encode".into()),
            "/format" => Some("json".into()),
            "goos" => Some("linux".into()),
            ".unit" => Some("sec/op".into()),
            _ => None,
        }
    }

    #[test]
    fn benchstats_documented_example() {
        let f = parse("/format:json goos:linux .unit:(ns/op OR sec/op)").unwrap();
        assert!(f.matches(&keys));
        assert!(!parse("/format:gob").unwrap().matches(&keys));
        assert!(parse("-/format:gob").unwrap().matches(&keys));
        assert!(parse(".name:/^Enc/ OR x:y").unwrap().matches(&keys));
        assert!(parse("\".name\":\"Encode\" AND *").unwrap().matches(&keys));
        assert!(!parse("(x:y OR goos:darwin) .name:Encode")
            .unwrap()
            .matches(&keys));
        assert!(!parse("pkg:a").unwrap().matches(&keys));
    }

    #[test]
    fn malformed_filters_say_where() {
        for bad in ["", "name", "a:(b", "a:/x", "(a:b", "a:b )", "a:\"x"] {
            let e = parse(bad).unwrap_err().to_string();
            assert!(e.starts_with("--filter '"), "{bad}: {e}");
        }
    }
}
