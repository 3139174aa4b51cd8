//! The JSON-RPC envelope of a `/mcp` body (`jsonrpc`, `id`, `method`, `params` and, for
//! `tools/call`, `params.name`), read in one walk that keeps only those members: every other
//! value is followed by serde_json's grammar and dropped as it is read, so a body costs no
//! tree of its size here.
//!
//! It reads what `serde_json::from_slice::<Value>` would give for those members (the last of
//! two equal keys wins, as in `Value`), so it can name the request of a body that is refused
//! for its duplicate keys or its size as well as of one that passed; only a string longer
//! than [`MAX_STRING_BYTES`] (which a body that passed cannot hold) is read as not a string,
//! so that naming a refused request never copies more than that.

use super::strict_json::{Key, MAX_STRING_BYTES, Rules, Walk};
use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use std::fmt;

/// What the body is at its top level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TopLevel {
    Object,
    /// A JSON-RPC batch (not part of MCP).
    Array,
    Scalar,
}

/// A member that must be a string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Text {
    Absent,
    String(String),
    /// Present, and not a string (`null` included).
    Other,
}

impl Text {
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Text::String(s) => Some(s),
            _ => None,
        }
    }
}

/// `params`, and its `name` when it is an object whose `name` is a string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Params {
    Absent,
    Object {
        name: Option<String>,
    },
    Array,
    /// Present, and neither an object nor an array.
    Other,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Envelope {
    pub top: TopLevel,
    /// The message has an `id` member, whatever its type.
    pub has_id: bool,
    /// The `id` when it is one MCP accepts: a string or an integer.
    pub id: Option<Value>,
    pub jsonrpc: Text,
    pub method: Text,
    pub params: Params,
}

impl Envelope {
    fn new(top: TopLevel) -> Envelope {
        Envelope {
            top,
            has_id: false,
            id: None,
            jsonrpc: Text::Absent,
            method: Text::Absent,
            params: Params::Absent,
        }
    }

    /// `params.name` of an object `params`, when a string.
    pub fn params_name(&self) -> Option<&str> {
        match &self.params {
            Params::Object { name } => name.as_deref(),
            _ => None,
        }
    }
}

/// The envelope of `bytes`, or `None` when they are not one JSON value.
pub fn read(bytes: &[u8]) -> Option<Envelope> {
    let walk = Walk::new(Rules::Grammar);
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let envelope = Top(&walk).deserialize(&mut de).ok()?;
    de.end().ok()?;
    Some(envelope)
}

/// The request id of `bytes` as `serde_json::Value` would read it, for an error that names
/// the request it refuses.
pub fn lenient_id(bytes: &[u8]) -> Option<Value> {
    read(bytes).and_then(|e| e.id)
}

struct Top<'w>(&'w Walk);

impl<'de> DeserializeSeed<'de> for Top<'_> {
    type Value = Envelope;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Envelope, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Top<'_> {
    type Value = Envelope;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC message")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Envelope, E> {
        Ok(Envelope::new(TopLevel::Scalar))
    }

    fn visit_i64<E>(self, _: i64) -> Result<Envelope, E> {
        Ok(Envelope::new(TopLevel::Scalar))
    }

    fn visit_u64<E>(self, _: u64) -> Result<Envelope, E> {
        Ok(Envelope::new(TopLevel::Scalar))
    }

    fn visit_f64<E>(self, _: f64) -> Result<Envelope, E> {
        Ok(Envelope::new(TopLevel::Scalar))
    }

    fn visit_str<E>(self, _: &str) -> Result<Envelope, E> {
        Ok(Envelope::new(TopLevel::Scalar))
    }

    fn visit_unit<E>(self) -> Result<Envelope, E> {
        Ok(Envelope::new(TopLevel::Scalar))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Envelope, A::Error> {
        self.0.visit_seq(seq)?;
        Ok(Envelope::new(TopLevel::Array))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Envelope, A::Error> {
        let mut envelope = Envelope::new(TopLevel::Object);
        while let Some(key) = map.next_key_seed(Key)? {
            match key.as_ref() {
                "id" => {
                    envelope.has_id = true;
                    envelope.id = match map.next_value_seed(Member(self.0))? {
                        Seen::Text(s) => Some(Value::String(s)),
                        Seen::Integer(n) => Some(Value::Number(n)),
                        Seen::Other => None,
                    };
                }
                "jsonrpc" => envelope.jsonrpc = map.next_value_seed(Member(self.0))?.into_text(),
                "method" => envelope.method = map.next_value_seed(Member(self.0))?.into_text(),
                "params" => envelope.params = map.next_value_seed(ParamsSeed(self.0))?,
                _ => map.next_value_seed(self.0)?,
            }
        }
        Ok(envelope)
    }
}

/// One member's value, kept only when it is a string or an integer.
enum Seen {
    Text(String),
    Integer(serde_json::Number),
    Other,
}

impl Seen {
    /// A string is kept only within the string cap: a body refused for a longer one is not
    /// copied to name its request (such an id is left out, as an unreadable one is).
    fn text(v: &str) -> Seen {
        if v.len() > MAX_STRING_BYTES {
            Seen::Other
        } else {
            Seen::Text(v.to_owned())
        }
    }

    fn into_text(self) -> Text {
        match self {
            Seen::Text(s) => Text::String(s),
            _ => Text::Other,
        }
    }
}

struct Member<'w>(&'w Walk);

impl<'de> DeserializeSeed<'de> for Member<'_> {
    type Value = Seen;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Seen, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Member<'_> {
    type Value = Seen;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Seen, E> {
        Ok(Seen::Other)
    }

    fn visit_i64<E>(self, v: i64) -> Result<Seen, E> {
        Ok(Seen::Integer(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Seen, E> {
        Ok(Seen::Integer(v.into()))
    }

    /// Never an integer: serde_json reads `1.0` and `1e3` as floats, as `Value` keeps them.
    fn visit_f64<E>(self, _: f64) -> Result<Seen, E> {
        Ok(Seen::Other)
    }

    fn visit_str<E>(self, v: &str) -> Result<Seen, E> {
        Ok(Seen::text(v))
    }

    fn visit_unit<E>(self) -> Result<Seen, E> {
        Ok(Seen::Other)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Seen, A::Error> {
        self.0.visit_seq(seq)?;
        Ok(Seen::Other)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Seen, A::Error> {
        self.0.visit_map(map)?;
        Ok(Seen::Other)
    }
}

struct ParamsSeed<'w>(&'w Walk);

impl<'de> DeserializeSeed<'de> for ParamsSeed<'_> {
    type Value = Params;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Params, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ParamsSeed<'_> {
    type Value = Params;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("JSON-RPC params")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Params, E> {
        Ok(Params::Other)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Params, E> {
        Ok(Params::Other)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Params, E> {
        Ok(Params::Other)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Params, E> {
        Ok(Params::Other)
    }

    fn visit_str<E>(self, _: &str) -> Result<Params, E> {
        Ok(Params::Other)
    }

    fn visit_unit<E>(self) -> Result<Params, E> {
        Ok(Params::Other)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Params, A::Error> {
        self.0.visit_seq(seq)?;
        Ok(Params::Array)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Params, A::Error> {
        let mut name = None;
        while let Some(key) = map.next_key_seed(Key)? {
            if key == "name" {
                name = match map.next_value_seed(Member(self.0))? {
                    Seen::Text(s) => Some(s),
                    _ => None,
                };
            } else {
                map.next_value_seed(self.0)?;
            }
        }
        Ok(Params::Object { name })
    }
}

/// The envelope as `serde_json::Value` gives it: the definition [`read`] must agree with
/// (for strings within [`MAX_STRING_BYTES`]).
#[doc(hidden)]
pub fn from_value(value: &Value) -> Envelope {
    let top = match value {
        Value::Object(_) => TopLevel::Object,
        Value::Array(_) => TopLevel::Array,
        _ => TopLevel::Scalar,
    };
    let text = |name: &str| match value.get(name) {
        None => Text::Absent,
        Some(Value::String(s)) => Text::String(s.clone()),
        Some(_) => Text::Other,
    };
    let id = match value.get("id") {
        Some(id @ Value::String(_)) => Some(id.clone()),
        Some(id @ Value::Number(n)) if n.is_i64() || n.is_u64() => Some(id.clone()),
        _ => None,
    };
    let params = match value.get("params") {
        None => Params::Absent,
        Some(Value::Object(p)) => Params::Object {
            name: p.get("name").and_then(Value::as_str).map(str::to_owned),
        },
        Some(Value::Array(_)) => Params::Array,
        Some(_) => Params::Other,
    };
    Envelope {
        top,
        has_id: value.as_object().is_some_and(|o| o.contains_key("id")),
        id,
        jsonrpc: if top == TopLevel::Object {
            text("jsonrpc")
        } else {
            Text::Absent
        },
        method: if top == TopLevel::Object {
            text("method")
        } else {
            Text::Absent
        },
        params: if top == TopLevel::Object {
            params
        } else {
            Params::Absent
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_envelope_is_what_a_value_tree_would_give() {
        for body in [
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":"a\u0062","method":"tools/call","params":{"name":"recall","arguments":{"name":5}}}"#,
            r#"{"jsonrpc":"2.0","id":-3,"method":"m","params":[1,{"name":"x"}]}"#,
            r#"{"jsonrpc":2,"id":1.0,"method":null,"params":null}"#,
            r#"{"id":null}"#,
            r#"{"id":18446744073709551615}"#,
            r#"{"id":18446744073709551616}"#,
            r#"{"id":[1],"method":{"a":1},"params":"x"}"#,
            r#"{"params":{"name":["x"]}}"#,
            r#"{"params":{"name":"a","name":"b"}}"#,
            // The last of two equal keys wins, as in `Value`.
            r#"{"id":1,"method":"a","id":"two","method":7}"#,
            r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#,
            "42",
            "\"id\"",
            "null",
            "{}",
        ] {
            let value: Value = serde_json::from_str(body).expect(body);
            assert_eq!(read(body.as_bytes()), Some(from_value(&value)), "{body}");
        }
        for not_json in ["", "{", "{\"id\":1} x", "{\"id\":1e400}", "{\"id\":1,}"] {
            assert!(
                serde_json::from_str::<Value>(not_json).is_err(),
                "{not_json}"
            );
            assert_eq!(read(not_json.as_bytes()), None, "{not_json}");
        }
        // A string past the cap is not copied: such an id is left out.
        let long = "i".repeat(MAX_STRING_BYTES + 1);
        let body = format!(r#"{{"id":"{long}","method":"{long}"}}"#);
        let envelope = read(body.as_bytes()).expect("json");
        assert!(envelope.has_id);
        assert_eq!((envelope.id, envelope.method), (None, Text::Other));
        // Past serde_json's nesting limit anywhere, the body is not JSON to `Value` either.
        let deep = format!(r#"{{"id":1,"x":{}{}}}"#, "[".repeat(200), "]".repeat(200));
        assert!(serde_json::from_str::<Value>(&deep).is_err());
        assert_eq!(lenient_id(deep.as_bytes()), None);
    }
}
