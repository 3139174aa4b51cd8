//! JSON parsing that refuses duplicate object keys.
//!
//! `serde_json::Value` keeps the last of two equal keys while rmcp's typed structs refuse
//! them, so the same body could mean one thing to our checks and another (or nothing) to the
//! dispatcher. A message with a duplicate key is ambiguous; it is refused before either looks
//! at it. Nesting depth stays bounded by serde_json's own recursion limit.

use serde::de::{DeserializeSeed, Deserializer, Error as _, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use std::fmt;

/// Why a body is not one unambiguous JSON value.
#[derive(Debug)]
pub enum StrictError {
    /// Not JSON at all (syntax, truncation, trailing characters, bad UTF-8).
    Syntax(serde_json::Error),
    /// Valid JSON whose meaning is ambiguous: an object repeats a key.
    DuplicateKey(serde_json::Error),
}

impl fmt::Display for StrictError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Syntax(e) | Self::DuplicateKey(e) => e.fmt(f),
        }
    }
}

pub fn parse(bytes: &[u8]) -> Result<Value, StrictError> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = Strict.deserialize(&mut de).map_err(classify)?;
    de.end().map_err(StrictError::Syntax)?;
    Ok(value)
}

fn classify(e: serde_json::Error) -> StrictError {
    // Our visitor raises the only data errors; everything else is the parser's.
    if e.classify() == serde_json::error::Category::Data {
        StrictError::DuplicateKey(e)
    } else {
        StrictError::Syntax(e)
    }
}

struct Strict;

impl<'de> DeserializeSeed<'de> for Strict {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(StrictVisitor)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
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
        // serde_json never hands a parser a non-finite float; Null is what `Value` does too.
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(Strict)? {
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
            let value = map.next_value_seed(Strict)?;
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicates_anywhere_are_refused_and_the_rest_parses_like_serde_json() {
        for dup in [
            r#"{"id":1,"id":2}"#,
            r#"{"params":{"arguments":{"a":1,"b":2,"a":3}}}"#,
            r#"[{"x":[{"k":true,"k":false}]}]"#,
        ] {
            assert!(
                matches!(parse(dup.as_bytes()), Err(StrictError::DuplicateKey(_))),
                "{dup}"
            );
        }
        for ok in [
            r#"{"jsonrpc":"2.0","id":-7,"method":"m","params":{"a":[1,2.5,"x",null,true]}}"#,
            "18446744073709551615",
            "\"\\u00e9\"",
            " [ ] ",
        ] {
            let strict = parse(ok.as_bytes()).expect(ok);
            let plain: Value = serde_json::from_str(ok).expect(ok);
            assert_eq!(strict, plain, "{ok}");
        }
        for bad in ["{", "{} {}", "[1,]", "\"\\ud800\"", "\u{feff}{}"] {
            assert!(
                matches!(parse(bad.as_bytes()), Err(StrictError::Syntax(_))),
                "{bad}"
            );
        }
        // Nesting is bounded by serde_json's recursion limit, not by the stack.
        let deep = "[".repeat(100_000);
        assert!(matches!(
            parse(deep.as_bytes()),
            Err(StrictError::Syntax(_))
        ));
    }
}
