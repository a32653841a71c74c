//! What a `.pth` checkpoint's pickle holds besides tensors. The torch engines load it with
//! `torch.load(weights_only=True)`, which refuses any object it does not know (a pickled
//! callable such as `os.system`, a custom class) and any non-tensor value in the state
//! dict; candle's loader silently skips such entries. So such a file would pass the parent's
//! checks and then fail every torch case: [`check_only_tensors`] refuses it once, up front,
//! naming the key.
//!
//! The pickle is parsed with candle's parser, which builds a tree of objects and never
//! imports or calls anything. The state dict is found as the Python worker finds it: the
//! top-level dict, or the dict under its `state_dict` or `model` key.
//!
//! Must not: read tensor data, or run anything from the pickle.
use std::io::Read;
use std::path::Path;

use candle_core::pickle::{Object, Stack};

use crate::util::error::UserError;

/// Largest `data.pkl` parsed (the real Wan 2.2 VAE's is about 40 KB).
const MAX_PICKLE_BYTES: u64 = 64 << 20;

/// Refuse (exit 2) a `.pth` whose pickle holds anything but tensors in its state dict, or a
/// reference to a Python object other than the few that rebuild tensors, naming the key.
pub fn check_only_tensors(path: &Path) -> Result<(), UserError> {
    let bad = |why: String| {
        UserError::file(
            path,
            format!("cannot read as a PyTorch (.pth zip pickle) checkpoint: {why}"),
        )
    };
    let file = std::fs::File::open(path).map_err(|e| bad(e.to_string()))?;
    let mut zip = zip::ZipArchive::new(std::io::BufReader::new(file)).map_err(|e| bad(e.to_string()))?;
    // torch.save stores every entry uncompressed, and candle reads only those: a compressed
    // one (a checkpoint re-zipped by another tool) would fail every candle case.
    for i in 0..zip.len() {
        let entry = zip.by_index_raw(i).map_err(|e| bad(e.to_string()))?;
        if entry.compression() != zip::CompressionMethod::Stored {
            return Err(bad(format!(
                "entry {} is compressed ({}); the candle engine reads only uncompressed entries, as \
                 torch.save writes them: save it again with torch.save, or convert it to .safetensors",
                entry.name().unwrap_or_default(),
                entry.compression()
            )));
        }
    }
    let names: Vec<String> = zip
        .file_names()
        .filter_map(|n| n.ok().map(|n| n.into_owned()))
        .filter(|n| n.ends_with("data.pkl"))
        .collect();
    for name in names {
        let entry = zip.by_name(&name).map_err(|e| bad(format!("{name}: {e}")))?;
        let mut data = Vec::new();
        entry
            .take(MAX_PICKLE_BYTES + 1)
            .read_to_end(&mut data)
            .map_err(|e| bad(format!("{name}: {e}")))?;
        if data.len() as u64 > MAX_PICKLE_BYTES {
            return Err(bad(format!(
                "{name} is larger than {}, far more than a state dict's index",
                crate::util::read::size_text(MAX_PICKLE_BYTES)
            )));
        }
        let mut stack = Stack::empty();
        stack
            .read_loop(&mut std::io::Cursor::new(&data))
            .map_err(|e| bad(format!("{name}: {e}")))?;
        let top = stack.finalize().map_err(|e| bad(format!("{name}: {e}")))?;
        if let Some(problem) = non_tensor(&top) {
            return Err(UserError::file(path, problem));
        }
    }
    Ok(())
}

/// The first thing in the pickle that is not a tensor where the state dict needs one, or
/// that `torch.load(weights_only=True)` would refuse, in words naming its key.
fn non_tensor(top: &Object) -> Option<String> {
    let Object::Dict(entries) = top else {
        return forbidden(top).map(|g| refused("the top level", &g));
    };
    let nested = entries.iter().position(|(k, v)| {
        matches!(k, Object::Unicode(s) if s == "state_dict" || s == "model") && matches!(v, Object::Dict(_))
    });
    let (state, under) = match nested {
        Some(i) => {
            // Beside the state dict, anything plain goes: only references are refused.
            for (k, v) in entries.iter().enumerate().filter(|(j, _)| *j != i).map(|(_, kv)| kv) {
                if let Some(g) = forbidden(v).or_else(|| forbidden(k)) {
                    return Some(refused(&format!("key `{}`", key_text(k)), &g));
                }
            }
            let Object::Dict(state) = &entries[i].1 else {
                return None;
            };
            (state, format!(" (in `{}`)", key_text(&entries[i].0)))
        }
        None => (entries, String::new()),
    };
    for (k, v) in state {
        let key = format!("key `{}`{under}", key_text(k));
        if let Some(g) = forbidden(v).or_else(|| forbidden(k)) {
            return Some(refused(&key, &g));
        }
        if !matches!(k, Object::Unicode(_)) {
            return Some(format!(
                "the state dict has a key that is not a string ({}); {HOW}",
                describe(k)
            ));
        }
        // torch's `state_dict()` keeps its `_metadata` attribute, which the parser merges in.
        if matches!((k, v), (Object::Unicode(s), Object::Dict(_)) if s == "_metadata") {
            continue;
        }
        if !is_tensor(k, v) {
            return Some(format!(
                "{key} holds {}, not a tensor: the torch engines refuse a state dict holding anything \
                 but tensors, so every torch case would fail; {HOW}",
                describe(v)
            ));
        }
    }
    None
}

/// How to fix a checkpoint with something else than tensors in it.
const HOW: &str = "a checkpoint must hold only tensors: save `model.state_dict()` with torch.save, or use \
                   .safetensors";

fn refused(place: &str, global: &str) -> String {
    format!(
        "{place} holds a pickled reference to {global}, which is not a tensor: the torch engines refuse such \
         a file (torch.load with weights_only) and nothing in it was run; {HOW}"
    )
}

fn is_tensor(key: &Object, value: &Object) -> bool {
    matches!(value.clone().into_tensor_info(key.clone(), Path::new("")), Ok(Some(_)))
}

/// The first Python object `torch.load(weights_only=True)` would not load, as
/// `module.name`, anywhere inside `obj` (walked without recursion: a hostile pickle may
/// nest deeply).
fn forbidden(obj: &Object) -> Option<String> {
    let mut todo = vec![obj];
    while let Some(o) = todo.pop() {
        match o {
            Object::Class {
                module_name,
                class_name,
            } if !allowed(module_name, class_name) => return Some(format!("{module_name}.{class_name}")),
            Object::Reduce { callable, args } | Object::Build { callable, args } => {
                todo.push(callable);
                todo.push(args);
            }
            Object::Tuple(items) | Object::List(items) => todo.extend(items),
            Object::Dict(pairs) => {
                for (k, v) in pairs {
                    todo.push(k);
                    todo.push(v);
                }
            }
            Object::PersistentLoad(inner) => todo.push(inner),
            _ => {}
        }
    }
    None
}

/// The classes and functions a state dict of tensors is made of.
fn allowed(module: &str, name: &str) -> bool {
    match module {
        "torch._utils" => matches!(
            name,
            "_rebuild_tensor_v2" | "_rebuild_parameter" | "_rebuild_parameter_with_state"
        ),
        "torch._tensor" => name == "_rebuild_from_type_v2",
        "torch" => name.ends_with("Storage") || matches!(name, "Tensor" | "Size" | "device"),
        "torch.nn.parameter" => name == "Parameter",
        "collections" => name == "OrderedDict",
        _ => false,
    }
}

fn key_text(k: &Object) -> String {
    match k {
        Object::Unicode(s) => s.clone(),
        other => describe(other).to_string(),
    }
}

/// A non-tensor value, in words.
fn describe(o: &Object) -> String {
    match o {
        Object::Class {
            module_name,
            class_name,
        } => format!("a reference to {module_name}.{class_name}"),
        Object::Reduce { callable, .. } | Object::Build { callable, .. } => match callable.as_ref() {
            Object::Class {
                module_name,
                class_name,
            } if allowed(module_name, class_name) => "a tensor this tool cannot read (an unsupported dtype)".into(),
            Object::Class {
                module_name,
                class_name,
            } => format!("a call to {module_name}.{class_name}"),
            _ => "a constructed object".into(),
        },
        Object::Int(_) | Object::Long(_) => "an integer".into(),
        Object::Float(_) => "a number".into(),
        Object::Unicode(_) => "a string".into(),
        Object::Bool(_) => "a boolean".into(),
        Object::None => "None".into(),
        Object::Tuple(_) => "a tuple".into(),
        Object::List(_) => "a list".into(),
        Object::Dict(_) => "a dict".into(),
        Object::Mark | Object::PersistentLoad(_) => "a damaged entry".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(m: &str, c: &str) -> Object {
        Object::Class {
            module_name: m.into(),
            class_name: c.into(),
        }
    }

    fn call(m: &str, c: &str) -> Object {
        Object::Reduce {
            callable: Box::new(class(m, c)),
            args: Box::new(Object::Tuple(vec![Object::Unicode("echo".into())])),
        }
    }

    #[test]
    fn non_tensors_are_named_by_key() {
        let key = |s: &str| Object::Unicode(s.into());
        let top = Object::Dict(vec![(key("hook"), call("os", "system"))]);
        let e = non_tensor(&top).unwrap();
        assert!(
            e.starts_with("key `hook` holds a pickled reference to os.system"),
            "{e}"
        );
        let top = Object::Dict(vec![(key("epoch"), Object::Int(3))]);
        let e = non_tensor(&top).unwrap();
        assert!(e.starts_with("key `epoch` holds an integer, not a tensor"), "{e}");
        // Beside a nested state dict, plain values are fine but references are not.
        let nested = Object::Dict(vec![(key("_metadata"), Object::Dict(vec![]))]);
        let top = Object::Dict(vec![
            (key("epoch"), Object::Int(3)),
            (key("state_dict"), nested.clone()),
        ]);
        assert_eq!(non_tensor(&top), None);
        let top = Object::Dict(vec![
            (key("cb"), class("builtins", "eval")),
            (key("state_dict"), nested),
        ]);
        assert!(non_tensor(&top)
            .unwrap()
            .starts_with("key `cb` holds a pickled reference to builtins.eval"));
    }

    #[test]
    fn deep_nesting_does_not_overflow_the_stack() {
        let mut o = Object::None;
        for _ in 0..200_000 {
            o = Object::List(vec![o]);
        }
        assert_eq!(forbidden(&o), None);
        // Dropping a deeply nested tree recurses in candle's types: leak it instead.
        std::mem::forget(o);
    }
}
