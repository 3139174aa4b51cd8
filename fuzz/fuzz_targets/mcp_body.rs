#![no_main]
//! Arbitrary bytes through the one pass `/mcp` makes over a body before anything is built
//! from it (`xmemo_server::mcp::strict_json`) and the envelope read after it
//! (`xmemo_server::mcp::envelope`). Asserts that:
//!
//! - with no caps, the walk accepts exactly what serde_json accepts as a tree with no repeated
//!   key, reports the same syntax and duplicate-key errors (same messages), and counts the
//!   values, depth and longest string the tree has;
//! - with caps, it refuses for a cap only when the uncapped walk went past that cap, and
//!   otherwise answers as the uncapped walk;
//! - the envelope (`jsonrpc`, `id`, `method`, `params`, `params.name`) is what a
//!   `serde_json::Value` of the body gives, and nothing when the body is not JSON;
//! - nothing panics.
//!
//! Input: the first byte picks the value cap, the second the string cap (255: none), the rest
//! is the body.

use libfuzzer_sys::fuzz_target;
use serde::de::{DeserializeSeed, Deserializer, Error as _, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use std::fmt;
use xmemo_server::mcp::envelope;
use xmemo_server::mcp::strict_json::{Caps, Shape, StrictError, check_with_caps};

/// The reference: a tree built by serde_json, refusing a repeated key as it is read (the
/// checker this pass replaced).
#[derive(Debug)]
enum Reference {
    Tree(Value),
    Syntax(String),
    DuplicateKey(String),
}

fn reference(bytes: &[u8]) -> Reference {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    match Tree.deserialize(&mut de).and_then(|v| de.end().map(|()| v)) {
        Ok(v) => Reference::Tree(v),
        Err(e) if e.classify() == serde_json::error::Category::Data => {
            Reference::DuplicateKey(e.to_string())
        }
        Err(e) => Reference::Syntax(e.to_string()),
    }
}

struct Tree;

impl<'de> DeserializeSeed<'de> for Tree {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Tree {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(Tree)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if object.contains_key(&key) {
                return Err(A::Error::custom(format_args!("duplicate key `{key}`")));
            }
            let value = map.next_value_seed(Tree)?;
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

fn shape_of(v: &Value) -> Shape {
    match v {
        Value::Array(items) => {
            let inner: Vec<Shape> = items.iter().map(shape_of).collect();
            Shape {
                values: 1 + inner.iter().map(|s| s.values).sum::<usize>(),
                depth: 1 + inner.iter().map(|s| s.depth).max().unwrap_or(0),
                longest_string: inner.iter().map(|s| s.longest_string).max().unwrap_or(0),
            }
        }
        Value::Object(members) => {
            let inner: Vec<(usize, Shape)> = members
                .iter()
                .map(|(k, v)| (k.len(), shape_of(v)))
                .collect();
            Shape {
                values: 1 + inner.iter().map(|(_, s)| s.values).sum::<usize>(),
                depth: 1 + inner.iter().map(|(_, s)| s.depth).max().unwrap_or(0),
                longest_string: inner
                    .iter()
                    .map(|(k, s)| (*k).max(s.longest_string))
                    .max()
                    .unwrap_or(0),
            }
        }
        Value::String(s) => Shape {
            values: 1,
            depth: 0,
            longest_string: s.len(),
        },
        _ => Shape {
            values: 1,
            depth: 0,
            longest_string: 0,
        },
    }
}

/// The outcome as comparable text: variant and message.
fn outcome(r: &Result<Shape, StrictError>) -> String {
    match r {
        Ok(shape) => format!("ok {shape:?}"),
        Err(StrictError::Syntax(e)) => format!("syntax {e}"),
        Err(StrictError::DuplicateKey(e)) => format!("duplicate {e}"),
        Err(StrictError::TooManyValues { limit }) => format!("values {limit}"),
        Err(StrictError::StringTooLong { limit }) => format!("string {limit}"),
    }
}

fn cap(byte: u8) -> usize {
    if byte == u8::MAX {
        usize::MAX
    } else {
        usize::from(byte % 64)
    }
}

fuzz_target!(|data: &[u8]| {
    let [values, strings, body @ ..] = data else {
        return;
    };
    let (uncapped, walked) = check_with_caps(body, Caps::NONE);

    // Uncapped: serde_json's grammar plus the duplicate rule, nothing more.
    match (&uncapped, reference(body)) {
        (Ok(shape), Reference::Tree(tree)) => {
            assert_eq!(*shape, shape_of(&tree), "shape of {tree}");
            assert_eq!(walked, *shape);
            let plain: Value = serde_json::from_slice(body).expect("serde_json accepts it");
            assert_eq!(plain, tree);
        }
        (Err(StrictError::Syntax(e)), Reference::Syntax(theirs)) => {
            assert_eq!(e.to_string(), theirs);
            assert!(serde_json::from_slice::<Value>(body).is_err());
        }
        (Err(StrictError::DuplicateKey(e)), Reference::DuplicateKey(theirs)) => {
            assert_eq!(e.to_string(), theirs);
        }
        (ours, theirs) => panic!("walk: {}, reference: {theirs:?}", outcome(ours)),
    }

    // Capped: a cap refuses only what went past it; below the caps nothing changes.
    let caps = Caps {
        values: cap(*values),
        string_bytes: cap(*strings),
    };
    let (capped, _) = check_with_caps(body, caps);
    match &capped {
        Err(StrictError::TooManyValues { limit }) => {
            assert_eq!(*limit, caps.values);
            assert!(walked.values > caps.values, "{walked:?} {caps:?}");
        }
        Err(StrictError::StringTooLong { limit }) => {
            assert_eq!(*limit, caps.string_bytes);
            assert!(
                walked.longest_string > caps.string_bytes,
                "{walked:?} {caps:?}"
            );
        }
        other => {
            assert_eq!(outcome(other), outcome(&uncapped), "{caps:?}");
            if let Ok(shape) = other {
                assert!(shape.values <= caps.values && shape.longest_string <= caps.string_bytes);
            }
        }
    }
    if walked.values <= caps.values && walked.longest_string <= caps.string_bytes {
        assert_eq!(outcome(&capped), outcome(&uncapped), "{caps:?}");
    }

    // The envelope is what a `Value` of the body says.
    match serde_json::from_slice::<Value>(body) {
        Ok(value) => assert_eq!(
            envelope::read(body),
            Some(envelope::from_value(&value)),
            "{value}"
        ),
        Err(_) => assert_eq!(envelope::read(body), None),
    }
});
