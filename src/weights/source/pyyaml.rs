//! A YAML file read as PyYAML's `yaml.safe_load` reads it (what ComfyUI reads its
//! `extra_model_paths.yaml` with), into [`Py`], the Python value it returns as far as a caller
//! can tell its type, truthiness and equality:
//!
//! - the events of libyaml's YAML 1.1 parser (PyYAML's own parser is a port of it);
//! - plain scalars typed by PyYAML's YAML 1.1 rules ([`scalar`]): `yes`/`no`/`on`/`off` (in three
//!   spellings each) and `true`/`false` are booleans, `y`/`n`, `0o7` and `1e3` are strings,
//!   `0x1f`, `017` (octal) and `1:30` (base 60) are ints, `2024-01-01` is a date; a `!` tag
//!   types its scalar the same way, quoted or not;
//! - merge keys (`<<: *a`, `<<: [*a, *b]`) applied as PyYAML's `flatten_mapping` does: the
//!   mapping's own keys win, then the first mapping of a list;
//! - a key given twice keeps its first place and its last value, as a Python dict filled in
//!   file order does (`1`, `1.0` and `true` are the same key there).
//!
//! Where PyYAML raises (two documents, an alias to no anchor, an anchor given twice, an
//! unhashable key, a merge of a scalar, `=` or `<<` as a value, an impossible date) the error
//! is [`Error::Raises`]. What this reader does not follow is [`Error::NotRead`], never
//! claimed to be refused: tags other than `!`, `!!str`, `!!null`, `!!bool`, `!!int`,
//! `!!float`, `!!timestamp`, `!!map`, `!!seq` (and those on text they do not type); an alias
//! inside the node it names; more than [`MAX_NODES`] nodes once aliases are copied out;
//! collections nested deeper than [`MAX_DEPTH`].
//!
//! Must not: read more than one file's text, or build Python values of other types.
use std::collections::HashMap;

use unsafe_libyaml as yaml_sys_unsafe;

use scalar::{resolve, scalar, TAG};

mod scalar;

/// How many nodes a file may have once each alias is copied out (PyYAML shares them; this
/// reader copies, so a file of nested aliases stops here instead of filling memory).
pub const MAX_NODES: usize = 100_000;

/// How deep collections may nest (`extra_model_paths.yaml` has 3 levels; PyYAML's recursive
/// composer raises RecursionError some hundreds of levels down).
pub const MAX_DEPTH: usize = 32;

/// Why a file gives no value.
#[derive(Debug, Clone, PartialEq)]
pub enum Error {
    /// PyYAML raises reading it: what, and where.
    Raises(String),
    /// This reader does not follow it (PyYAML may or may not accept it): what, and where.
    NotRead(String),
}

/// The Python value `yaml.safe_load` returns, as far as its type, truthiness and equality go.
#[derive(Debug, Clone, PartialEq)]
pub enum Py {
    None,
    Bool(bool),
    /// An int or a float, as f64 (exact for the zero test and for small keys).
    Num(f64),
    Str(String),
    /// A `datetime.date` or `datetime.datetime`, as written.
    Date(String),
    List(Vec<Py>),
    /// A dict in insertion order, keys unique by Python equality.
    Dict(Vec<(Py, Py)>),
}

impl Py {
    /// Python's `bool(value)`.
    pub fn truthy(&self) -> bool {
        match self {
            Py::None => false,
            Py::Bool(b) => *b,
            Py::Num(n) => *n != 0.0,
            Py::Str(s) => !s.is_empty(),
            Py::Date(_) => true,
            Py::List(v) => !v.is_empty(),
            Py::Dict(v) => !v.is_empty(),
        }
    }

    /// The value in words, for messages: its Python type and, for a scalar, how it reads.
    pub fn describe(&self) -> String {
        match self {
            Py::None => "null (None)".into(),
            Py::Bool(b) => format!("the boolean {}", if *b { "True" } else { "False" }),
            Py::Num(n) => format!("the number {n}"),
            Py::Str(s) => format!("the string {s:?}"),
            Py::Date(d) => format!("the date {d}"),
            Py::List(_) => "a list".into(),
            Py::Dict(_) => "a mapping".into(),
        }
    }

    /// The value of `key` (a string) in a dict.
    pub fn get(&self, key: &str) -> Option<&Py> {
        match self {
            Py::Dict(pairs) => pairs
                .iter()
                .find(|(k, _)| matches!(k, Py::Str(s) if s == key))
                .map(|(_, v)| v),
            _ => None,
        }
    }

    /// Python's `==` between two hashable keys.
    fn same_key(&self, other: &Py) -> bool {
        let num = |p: &Py| match p {
            Py::Bool(b) => Some(f64::from(u8::from(*b))),
            Py::Num(n) => Some(*n),
            _ => None,
        };
        match (num(self), num(other)) {
            (Some(a), Some(b)) => a == b,
            _ => match (self, other) {
                (Py::None, Py::None) => true,
                (Py::Str(a), Py::Str(b)) | (Py::Date(a), Py::Date(b)) => a == b,
                _ => false,
            },
        }
    }
}

/// Read `text` as `yaml.safe_load` does.
pub fn safe_load(text: &str) -> Result<Py, Error> {
    let events = parse(text)?;
    // Collections nested deeper than MAX_DEPTH are refused before anything is built: the
    // composer recurses once a level (10,000 levels overflowed the stack) and copied each
    // level's subtree (a 50 KB file of nested mappings took 8.6 GB).
    let mut depth = 0usize;
    for (ev, line) in &events {
        match ev {
            Ev::SeqStart(..) | Ev::MapStart(..) => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Err(Error::NotRead(format!(
                        "collections nested deeper than {MAX_DEPTH} levels (line {line})"
                    )));
                }
            }
            Ev::SeqEnd | Ev::MapEnd => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    let mut c = Composer {
        events: events.into_iter().peekable(),
        anchors: HashMap::new(),
        nodes: 0,
    };
    match c.next()? {
        (Ev::StreamStart, _) => {}
        (_, line) => return Err(Error::Raises(format!("no stream start (line {line})"))),
    }
    let root = match c.next()? {
        (Ev::StreamEnd, _) => return Ok(Py::None),
        (Ev::DocStart, _) => {
            let root = c.node()?;
            c.next()?; // the document's end
            root
        }
        (_, line) => return Err(Error::Raises(format!("no document start (line {line})"))),
    };
    if let (Ev::DocStart, line) = c.next()? {
        return Err(Error::Raises(format!(
            "expected a single document in the stream, but found another document (line {line})"
        )));
    }
    construct(&root, false)
}

/// One libyaml event, owned; lines count from 1.
#[derive(Debug)]
enum Ev {
    StreamStart,
    StreamEnd,
    DocStart,
    DocEnd,
    Alias(String),
    Scalar {
        anchor: Option<String>,
        tag: Option<String>,
        value: String,
        plain: bool,
    },
    SeqStart(Option<String>, Option<String>),
    SeqEnd,
    MapStart(Option<String>, Option<String>),
    MapEnd,
}

/// The events of `text`, each with its line; a syntax error is what PyYAML raises too.
fn parse(text: &str) -> Result<Vec<(Ev, u64)>, Error> {
    let mut parser = Box::<yaml_sys_unsafe::yaml_parser_t>::new_uninit();
    let p = parser.as_mut_ptr();
    // SAFETY: `p` points to memory owned by `parser` for this whole function; libyaml reads
    // `text`, which outlives the parser, and `yaml_parser_delete` runs on every path after a
    // successful initialize. Event pointers are read only before `yaml_event_delete`.
    unsafe {
        if yaml_sys_unsafe::yaml_parser_initialize(p).fail {
            return Err(Error::NotRead("libyaml could not start (out of memory)".into()));
        }
        yaml_sys_unsafe::yaml_parser_set_encoding(p, yaml_sys_unsafe::YAML_UTF8_ENCODING);
        yaml_sys_unsafe::yaml_parser_set_input_string(p, text.as_ptr(), text.len() as u64);
        let mut out = Vec::new();
        let result = loop {
            let mut event = std::mem::MaybeUninit::<yaml_sys_unsafe::yaml_event_t>::uninit();
            if yaml_sys_unsafe::yaml_parser_parse(p, event.as_mut_ptr()).fail {
                let cstr = |s: *const libc::c_char| match s.is_null() {
                    true => String::new(),
                    false => std::ffi::CStr::from_ptr(s).to_string_lossy().into_owned(),
                };
                let parser: &yaml_sys_unsafe::yaml_parser_t = &*p;
                let mark = parser.problem_mark;
                let context = cstr(parser.context);
                let context = if context.is_empty() {
                    context
                } else {
                    format!("{context}: ")
                };
                break Err(Error::Raises(format!(
                    "not valid YAML ({context}{} at line {} column {})",
                    cstr(parser.problem),
                    mark.line + 1,
                    mark.column + 1
                )));
            }
            let e = event.assume_init_mut();
            let text_of = |s: *const u8| match s.is_null() {
                true => None,
                false => Some(std::ffi::CStr::from_ptr(s.cast()).to_string_lossy().into_owned()),
            };
            let ev = match e.type_ {
                yaml_sys_unsafe::YAML_STREAM_START_EVENT => Ev::StreamStart,
                yaml_sys_unsafe::YAML_STREAM_END_EVENT => Ev::StreamEnd,
                yaml_sys_unsafe::YAML_DOCUMENT_START_EVENT => Ev::DocStart,
                yaml_sys_unsafe::YAML_DOCUMENT_END_EVENT => Ev::DocEnd,
                yaml_sys_unsafe::YAML_ALIAS_EVENT => Ev::Alias(text_of(e.data.alias.anchor).unwrap_or_default()),
                yaml_sys_unsafe::YAML_SCALAR_EVENT => {
                    let s = e.data.scalar;
                    let bytes = std::slice::from_raw_parts(s.value, s.length as usize);
                    Ev::Scalar {
                        anchor: text_of(s.anchor),
                        tag: text_of(s.tag),
                        value: String::from_utf8_lossy(bytes).into_owned(),
                        plain: s.style == yaml_sys_unsafe::YAML_PLAIN_SCALAR_STYLE,
                    }
                }
                yaml_sys_unsafe::YAML_SEQUENCE_START_EVENT => {
                    let s = e.data.sequence_start;
                    Ev::SeqStart(text_of(s.anchor), text_of(s.tag))
                }
                yaml_sys_unsafe::YAML_SEQUENCE_END_EVENT => Ev::SeqEnd,
                yaml_sys_unsafe::YAML_MAPPING_START_EVENT => {
                    let s = e.data.mapping_start;
                    Ev::MapStart(text_of(s.anchor), text_of(s.tag))
                }
                _ => Ev::MapEnd,
            };
            let line = e.start_mark.line + 1;
            yaml_sys_unsafe::yaml_event_delete(e);
            let end = matches!(ev, Ev::StreamEnd);
            out.push((ev, line));
            if end {
                break Ok(out);
            }
        };
        yaml_sys_unsafe::yaml_parser_delete(p);
        result
    }
}

/// A composed node (aliases copied out), with the line it starts on.
#[derive(Debug, Clone)]
enum Node {
    Scalar {
        tag: Option<String>,
        value: String,
        plain: bool,
        line: u64,
    },
    Seq(Option<String>, Vec<Node>, u64),
    Map(Option<String>, Vec<(Node, Node)>, u64),
}

struct Composer {
    events: std::iter::Peekable<std::vec::IntoIter<(Ev, u64)>>,
    /// Each anchor and its node; `None` while the node is still being read.
    anchors: HashMap<String, Option<Node>>,
    nodes: usize,
}

impl Composer {
    fn next(&mut self) -> Result<(Ev, u64), Error> {
        self.events
            .next()
            .ok_or_else(|| Error::Raises("the file ends inside the document".into()))
    }

    fn count(&mut self, n: usize) -> Result<(), Error> {
        self.nodes += n;
        match self.nodes > MAX_NODES {
            true => Err(Error::NotRead(format!(
                "more than {MAX_NODES} nodes once its aliases are copied out"
            ))),
            false => Ok(()),
        }
    }

    fn anchor(&mut self, anchor: &Option<String>, line: u64) -> Result<(), Error> {
        if let Some(a) = anchor {
            if self.anchors.insert(a.clone(), None).is_some() {
                return Err(Error::Raises(format!("found duplicate anchor {a:?} (line {line})")));
            }
        }
        Ok(())
    }

    fn node(&mut self) -> Result<Node, Error> {
        let (ev, line) = self.next()?;
        let (anchor, node) = match ev {
            Ev::Alias(a) => {
                return match self.anchors.get(&a) {
                    None => Err(Error::Raises(format!("found undefined alias {a:?} (line {line})"))),
                    Some(None) => Err(Error::NotRead(format!(
                        "the alias *{a} inside the node it names (line {line})"
                    ))),
                    Some(Some(n)) => {
                        let n = n.clone();
                        self.count(size(&n))?;
                        Ok(n)
                    }
                };
            }
            Ev::Scalar {
                anchor,
                tag,
                value,
                plain,
            } => {
                self.anchor(&anchor, line)?;
                self.count(1)?;
                let node = Node::Scalar {
                    tag,
                    value,
                    plain,
                    line,
                };
                (anchor, node)
            }
            Ev::SeqStart(anchor, tag) => {
                self.anchor(&anchor, line)?;
                self.count(1)?;
                let mut items = Vec::new();
                while !matches!(self.events.peek(), Some((Ev::SeqEnd, _)) | None) {
                    items.push(self.node()?);
                }
                self.next()?;
                (anchor, Node::Seq(tag, items, line))
            }
            Ev::MapStart(anchor, tag) => {
                self.anchor(&anchor, line)?;
                self.count(1)?;
                let mut pairs = Vec::new();
                while !matches!(self.events.peek(), Some((Ev::MapEnd, _)) | None) {
                    let k = self.node()?;
                    pairs.push((k, self.node()?));
                }
                self.next()?;
                (anchor, Node::Map(tag, pairs, line))
            }
            other => return Err(Error::Raises(format!("unexpected {other:?} (line {line})"))),
        };
        if let Some(a) = anchor {
            self.anchors.insert(a, Some(node.clone()));
        }
        Ok(node)
    }
}

fn size(n: &Node) -> usize {
    match n {
        Node::Scalar { .. } => 1,
        Node::Seq(_, items, _) => 1 + items.iter().map(size).sum::<usize>(),
        Node::Map(_, pairs, _) => 1 + pairs.iter().map(|(k, v)| size(k) + size(v)).sum::<usize>(),
    }
}

fn construct(node: &Node, is_key: bool) -> Result<Py, Error> {
    match node {
        Node::Scalar {
            tag,
            value,
            plain,
            line,
        } => scalar(tag.as_deref(), value, *plain, *line, is_key),
        Node::Seq(tag, items, line) => {
            collection_tag(tag, "seq", *line)?;
            Ok(Py::List(
                items.iter().map(|n| construct(n, false)).collect::<Result<_, _>>()?,
            ))
        }
        Node::Map(tag, pairs, line) => {
            collection_tag(tag, "map", *line)?;
            let mut out: Vec<(Py, Py)> = Vec::new();
            for (k, v) in flatten(pairs)? {
                let key = construct(&k, true)?;
                if matches!(key, Py::List(_) | Py::Dict(_)) {
                    return Err(Error::Raises(format!("found unhashable key (line {line})")));
                }
                let value = construct(&v, false)?;
                match out.iter_mut().find(|(old, _)| old.same_key(&key)) {
                    Some(slot) => slot.1 = value,
                    None => out.push((key, value)),
                }
            }
            Ok(Py::Dict(out))
        }
    }
}

fn collection_tag(tag: &Option<String>, kind: &str, line: u64) -> Result<(), Error> {
    match tag.as_deref() {
        None | Some("!") => Ok(()),
        Some(t) if t.strip_prefix(TAG) == Some(kind) => Ok(()),
        Some(t) => Err(Error::NotRead(format!("the tag {t} (line {line})"))),
    }
}

/// PyYAML's `flatten_mapping`: the pairs of the merged mappings (each flattened first; of a
/// list, the last first so the first wins), then the mapping's own.
fn flatten(pairs: &[(Node, Node)]) -> Result<Vec<(Node, Node)>, Error> {
    let (mut merged, mut own) = (Vec::new(), Vec::new());
    for (k, v) in pairs {
        let is_merge = match k {
            Node::Scalar { tag, value, plain, .. } => match tag.as_deref() {
                None => *plain && resolve(value) == "merge",
                Some("!") => resolve(value) == "merge",
                Some(t) => t == format!("{TAG}merge"),
            },
            _ => false,
        };
        if !is_merge {
            own.push((k.clone(), v.clone()));
            continue;
        }
        let bad = |line: u64, what: &str| Error::Raises(format!("expected {what} for merging (line {line})"));
        match v {
            Node::Map(_, inner, _) => merged.extend(flatten(inner)?),
            Node::Seq(_, items, line) => {
                let mut lists = Vec::new();
                for item in items {
                    match item {
                        Node::Map(_, inner, _) => lists.push(flatten(inner)?),
                        _ => return Err(bad(*line, "a mapping")),
                    }
                }
                merged.extend(lists.into_iter().rev().flatten());
            }
            Node::Scalar { line, .. } => return Err(bad(*line, "a mapping or list of mappings")),
        }
    }
    merged.extend(own);
    Ok(merged)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Py {
        safe_load(text).unwrap_or_else(|e| panic!("{text:?}: {e:?}"))
    }

    #[test]
    fn merge_keys_and_duplicate_keys_are_read_as_pyyaml_reads_them() {
        let d = load(
            "a: &a {p: 1, q: 1}\nb: &b {<<: *a, q: 2}\nc:\n  r: 0\n  <<: [*b, {p: 9, s: 3}]\n  r: 4\n\
             a: {p: last}\n'<<': {x: 1}\n",
        );
        let Py::Dict(top) = &d else { panic!("{d:?}") };
        // `a` keeps its first place with its last value; a quoted `<<` is a plain key.
        let keys: Vec<_> = top.iter().map(|(k, _)| k.clone()).collect();
        assert_eq!(keys, ["a", "b", "c", "<<"].map(|k| Py::Str(k.into())));
        assert_eq!(d.get("a").unwrap().get("p"), Some(&Py::Str("last".into())));
        let b = d.get("b").unwrap();
        assert_eq!((b.get("p"), b.get("q")), (Some(&Py::Num(1.0)), Some(&Py::Num(2.0))));
        // Merged first (the list's last mapping placed first, the first winning), then the
        // mapping's own keys, the last one winning: PyYAML gives {p: 1, s: 3, q: 2, r: 4}.
        let Py::Dict(c) = d.get("c").unwrap() else { panic!() };
        let c: Vec<_> = c.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        assert_eq!(
            c,
            [("p", 1.0), ("s", 3.0), ("q", 2.0), ("r", 4.0)].map(|(k, v)| (Py::Str(k.into()), Py::Num(v)))
        );
        // 1, 1.0 and true are one key in a Python dict.
        let Py::Dict(n) = load("1: a\n1.0: b\ntrue: c\n") else {
            panic!()
        };
        assert_eq!(n, [(Py::Num(1.0), Py::Str("c".into()))]);
    }

    #[test]
    fn deep_nesting_is_refused_before_anything_is_built() {
        // Issue 48: 10,000 `[` overflowed the stack (exit 134); 10,000 nested `{b: ...}`
        // took 8.6 GB before being refused.
        for text in [
            "[".repeat(10_000) + &"]".repeat(10_000),
            "{b: ".repeat(10_000) + "1" + &"}".repeat(10_000),
        ] {
            let e = safe_load(&text).unwrap_err();
            assert!(
                matches!(&e, Error::NotRead(m) if m.contains("deeper than 32 levels")),
                "{e:?}"
            );
        }
        let ok = "{a: ".repeat(MAX_DEPTH) + "1" + &"}".repeat(MAX_DEPTH);
        assert!(safe_load(&ok).is_ok());
    }

    #[test]
    fn what_pyyaml_raises_on_is_told_from_what_is_not_read() {
        for t in [
            "a: 1\n---\nb: 2\n",
            "a: *nowhere\n",
            "a: &x 1\nb: &x 2\n",
            "? [1]\n: 2\n",
            "a: {<<: 1}\n",
            "a: =\n",
            "a: <<\n",
            "a: 2024-13-01\n",
            "a: !!bool maybe\n",
            "a: [unclosed\n",
        ] {
            assert!(
                matches!(safe_load(t), Err(Error::Raises(_))),
                "{t:?}: {:?}",
                safe_load(t)
            );
        }
        for t in ["a: !!binary aGk=\n", "a: !custom x\n", "a: &x [*x]\n", "a: !!int 1e3\n"] {
            assert!(
                matches!(safe_load(t), Err(Error::NotRead(_))),
                "{t:?}: {:?}",
                safe_load(t)
            );
        }
        assert_eq!(load(""), Py::None);
        assert_eq!(load("{=: 1}"), Py::Dict(vec![(Py::Str("=".into()), Py::Num(1.0))]));
        let laughs = (0..12).fold("a0: &a0 [x, x, x, x]\n".to_string(), |s, i| {
            format!("{s}a{}: &a{} [*a{i}, *a{i}, *a{i}, *a{i}]\n", i + 1, i + 1)
        });
        assert!(matches!(safe_load(&laughs), Err(Error::NotRead(m)) if m.contains("nodes")));
    }
}
