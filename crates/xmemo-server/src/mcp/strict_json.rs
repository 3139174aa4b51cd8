//! The one pass over a `/mcp` body before anything is built from it.
//!
//! Two rules a JSON parser does not make, checked while walking the bytes with serde_json and
//! keeping nothing of them (no tree, no string copies but an escaped object key):
//!
//! - **No duplicate object keys.** `serde_json::Value` keeps the last of two equal keys while
//!   rmcp's typed structs refuse them, so the same body could mean one thing to our checks and
//!   another (or nothing) to the dispatcher. A message with a duplicate key is ambiguous; it is
//!   refused before either looks at it.
//! - **At most [`MAX_VALUES`] JSON values and no string over [`MAX_STRING_BYTES`].** Whatever
//!   passes is then parsed into trees (our `ClientJsonRpcMessage`, rmcp's own parse of the same
//!   bytes, the tool's arguments), and some strings (`method`, `id`, a tool's name) are copied
//!   into every answer and log line on the way. A tree costs 250 bytes (a number in an array)
//!   to 1,100 bytes (an object of one member) per value in rmcp's parse against 2 bytes of
//!   input, so the count, not the body size, bounds its memory. The walk stops at the first
//!   value or string past its cap, so a refused body is not read further.
//!
//! Nesting depth stays bounded by serde_json's recursion limit ([`MAX_DEPTH`]); a test pins it.
//! Everything else is serde_json's own grammar, so a body passes exactly when
//! `serde_json::from_slice::<Value>` accepts it and the two rules hold.

use serde::de::{DeserializeSeed, Deserializer, Error as _, MapAccess, SeqAccess, Visitor};
use std::borrow::Cow;
use std::cell::Cell;
use std::collections::HashSet;
use std::fmt;

/// Most JSON values one `/mcp` message may hold (every scalar, array and object counts once;
/// an object member's key does not count apart from its value). Twice what the densest
/// legitimate message needs: a save carries at most ~8,500 (16 KiB of metadata as 8,191
/// numbers, plus 50 components of 5 values). Measured through the whole path (debug build):
/// 16,000 values of the dearest shape (`{"a":{"b":{"c":0}}}` repeated, 78 KiB) raised the
/// server's peak by 22 MiB; 40,000 by ~55 MiB. An execution's `input_args` larger than this is
/// sent over REST.
pub const MAX_VALUES: usize = 16_384;

/// Longest string (or object key), in bytes once unescaped. Nothing a client may send needs
/// more: the longest fields are an execution's `input_args` (1 MiB in all, so no string in it
/// is longer) and a component's base64 content (~171 KiB).
pub const MAX_STRING_BYTES: usize = 1024 * 1024;

/// The caps a walk enforces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    pub values: usize,
    pub string_bytes: usize,
}

impl Caps {
    pub const MCP: Caps = Caps {
        values: MAX_VALUES,
        string_bytes: MAX_STRING_BYTES,
    };
    /// Grammar only: what `serde_json` alone accepts.
    pub const NONE: Caps = Caps {
        values: usize::MAX,
        string_bytes: usize::MAX,
    };
}

/// Deepest nesting of arrays and objects (serde_json's recursion limit: the 128th open
/// container is refused as a syntax error).
pub const MAX_DEPTH: usize = 127;

/// Why a body is not one unambiguous JSON value of a bounded size.
#[derive(Debug)]
pub enum StrictError {
    /// Not JSON at all (syntax, truncation, trailing characters, bad UTF-8, nesting past
    /// [`MAX_DEPTH`]).
    Syntax(serde_json::Error),
    /// Valid JSON whose meaning is ambiguous: an object repeats a key.
    DuplicateKey(serde_json::Error),
    /// More than `limit` values; the rest of the body was not read.
    TooManyValues { limit: usize },
    /// A string or key longer than `limit` bytes; the rest of the body was not read.
    StringTooLong { limit: usize },
}

impl fmt::Display for StrictError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Syntax(e) | Self::DuplicateKey(e) => e.fmt(f),
            Self::TooManyValues { limit } => {
                write!(f, "the message holds more than {limit} JSON values")
            }
            Self::StringTooLong { limit } => {
                write!(f, "the message holds a string longer than {limit} bytes")
            }
        }
    }
}

/// What a body that passed holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// JSON values, counted as [`MAX_VALUES`] counts them.
    pub values: usize,
    /// Deepest nesting of arrays and objects (a scalar alone: 0, `[]`: 1).
    pub depth: usize,
    /// Longest string or object key, in bytes once unescaped.
    pub longest_string: usize,
}

/// Checks `bytes` with the caps of `/mcp` ([`Caps::MCP`]).
pub fn check(bytes: &[u8]) -> Result<Shape, StrictError> {
    check_with_caps(bytes, Caps::MCP).0
}

/// Checks `bytes` with `caps` (the fuzz target picks small ones). Also says how far the walk
/// got: the values it counted and the longest string it read before it stopped.
#[doc(hidden)]
pub fn check_with_caps(bytes: &[u8], caps: Caps) -> (Result<Shape, StrictError>, Shape) {
    let walk = Walk::new(Rules::Strict(caps));
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let result = (&walk)
        .deserialize(&mut de)
        .and_then(|()| de.end())
        .map(|()| walk.shape())
        .map_err(|e| walk.classify(e));
    (result, walk.shape())
}

/// Whether a walk checks the rules, or only follows serde_json's grammar (to read a refused
/// body's request id as `serde_json::Value` would, without building it).
#[derive(Clone, Copy)]
pub(super) enum Rules {
    Strict(Caps),
    Grammar,
}

/// Which cap stopped a walk.
#[derive(Clone, Copy)]
enum Over {
    Values(usize),
    String(usize),
}

/// The state of one walk over a document; a `&Walk` is the seed of each value.
pub(super) struct Walk {
    rules: Rules,
    values: Cell<usize>,
    depth: Cell<usize>,
    deepest: Cell<usize>,
    longest_string: Cell<usize>,
    over: Cell<Option<Over>>,
}

impl Walk {
    pub(super) fn new(rules: Rules) -> Walk {
        Walk {
            rules,
            values: Cell::new(0),
            depth: Cell::new(0),
            deepest: Cell::new(0),
            longest_string: Cell::new(0),
            over: Cell::new(None),
        }
    }

    fn shape(&self) -> Shape {
        Shape {
            values: self.values.get(),
            depth: self.deepest.get(),
            longest_string: self.longest_string.get(),
        }
    }

    fn classify(&self, e: serde_json::Error) -> StrictError {
        match self.over.get() {
            Some(Over::Values(limit)) => StrictError::TooManyValues { limit },
            Some(Over::String(limit)) => StrictError::StringTooLong { limit },
            // The walk raises the only data errors besides the caps; the rest is the parser's.
            None if e.classify() == serde_json::error::Category::Data => {
                StrictError::DuplicateKey(e)
            }
            None => StrictError::Syntax(e),
        }
    }

    /// Notes a string or key of `len` bytes; `Err` past the cap.
    fn string<E: serde::de::Error>(&self, len: usize) -> Result<(), E> {
        self.longest_string.set(self.longest_string.get().max(len));
        match self.rules {
            Rules::Strict(caps) if len > caps.string_bytes => {
                self.over.set(Some(Over::String(caps.string_bytes)));
                Err(E::custom(format_args!(
                    "the message holds a string longer than {} bytes",
                    caps.string_bytes
                )))
            }
            _ => Ok(()),
        }
    }

    fn enter(&self) {
        let depth = self.depth.get() + 1;
        self.depth.set(depth);
        self.deepest.set(self.deepest.get().max(depth));
    }

    fn leave(&self) {
        self.depth.set(self.depth.get().saturating_sub(1));
    }
}

impl<'de> DeserializeSeed<'de> for &Walk {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        // Counted before the value is read, so the walk stops at the first value past the cap
        // however large that value would be.
        let values = self.values.get() + 1;
        self.values.set(values);
        if let Rules::Strict(caps) = self.rules
            && values > caps.values
        {
            self.over.set(Some(Over::Values(caps.values)));
            return Err(D::Error::custom(format_args!(
                "the message holds more than {} JSON values",
                caps.values
            )));
        }
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for &Walk {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<(), E> {
        self.string(v.len())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.enter();
        while seq.next_element_seed(self)?.is_some() {}
        self.leave();
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.enter();
        // Keys borrow from the body unless they hold an escape; the set lives while its object
        // is read, so it holds at most the keys of the objects open at once.
        let mut seen: HashSet<Cow<'de, str>> = HashSet::new();
        while let Some(key) = map.next_key_seed(Key)? {
            self.string(key.len())?;
            if let Rules::Strict(_) = self.rules {
                if seen.contains(&key) {
                    return Err(A::Error::custom(format_args!("duplicate key `{key}`")));
                }
                seen.insert(key);
            }
            map.next_value_seed(self)?;
        }
        self.leave();
        Ok(())
    }
}

/// An object key, borrowed from the input when it holds no escape.
pub(super) struct Key;

impl<'de> DeserializeSeed<'de> for Key {
    type Value = Cow<'de, str>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object key")
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn values_of(v: &Value) -> usize {
        1 + match v {
            Value::Array(items) => items.iter().map(values_of).sum(),
            Value::Object(members) => members.values().map(values_of).sum(),
            _ => 0,
        }
    }

    fn capped(bytes: &[u8], values: usize) -> Result<Shape, StrictError> {
        let caps = Caps {
            values,
            ..Caps::NONE
        };
        check_with_caps(bytes, caps).0
    }

    fn longest_of(v: &Value) -> usize {
        match v {
            Value::String(s) => s.len(),
            Value::Array(items) => items.iter().map(longest_of).max().unwrap_or(0),
            Value::Object(members) => members
                .iter()
                .map(|(k, v)| k.len().max(longest_of(v)))
                .max()
                .unwrap_or(0),
            _ => 0,
        }
    }

    fn depth_of(v: &Value) -> usize {
        match v {
            Value::Array(items) => 1 + items.iter().map(depth_of).max().unwrap_or(0),
            Value::Object(members) => 1 + members.values().map(depth_of).max().unwrap_or(0),
            _ => 0,
        }
    }

    #[test]
    fn duplicates_anywhere_are_refused_and_named() {
        for (dup, key) in [
            (r#"{"id":1,"id":2}"#, "id"),
            (r#"{"params":{"arguments":{"a":1,"b":2,"a":3}}}"#, "a"),
            (r#"[{"x":[{"k":true,"k":false}]}]"#, "k"),
            // The same key once escaped: equal once read, as for every JSON reader.
            (r#"{"method":"a","\u006dethod":"b"}"#, "method"),
        ] {
            match check(dup.as_bytes()) {
                Err(StrictError::DuplicateKey(e)) => {
                    assert!(
                        e.to_string().starts_with(&format!("duplicate key `{key}`")),
                        "{dup}: {e}"
                    );
                }
                other => panic!("{dup}: {other:?}"),
            }
        }
        // Equal keys in different objects are not duplicates.
        assert!(check(br#"{"a":{"a":1},"b":[{"a":1},{"a":2}]}"#).is_ok());
    }

    #[test]
    fn valid_input_is_what_serde_json_accepts_with_the_same_shape() {
        for ok in [
            r#"{"jsonrpc":"2.0","id":-7,"method":"m","params":{"a":[1,2.5,"x",null,true]}}"#,
            "18446744073709551615",
            "-9223372036854775808",
            "1e300",
            "\"\\u00e9\\n\"",
            r#"{"a\u00e9b":"\\\"","longer key":"x"}"#,
            " [ ] ",
            "{}",
            r#"[[],[[]],{"a":{"b":{}}}]"#,
        ] {
            let plain: Value = serde_json::from_str(ok).expect(ok);
            let shape = check(ok.as_bytes()).expect(ok);
            assert_eq!(shape.values, values_of(&plain), "{ok}");
            assert_eq!(shape.depth, depth_of(&plain), "{ok}");
            assert_eq!(shape.longest_string, longest_of(&plain), "{ok}");
        }
        for bad in [
            "",
            "{",
            "{} {}",
            "[1,]",
            "{\"a\":1,}",
            "\"\\ud800\"",
            "\u{feff}{}",
            "1e400",
            "{1:2}",
            "nul",
            "[\"\x01\"]",
        ] {
            assert!(serde_json::from_str::<Value>(bad).is_err(), "{bad}");
            assert!(
                matches!(check(bad.as_bytes()), Err(StrictError::Syntax(_))),
                "{bad}"
            );
        }
        assert!(matches!(check(b"[\"\xff\"]"), Err(StrictError::Syntax(_))));
    }

    #[test]
    fn syntax_errors_read_as_serde_json_reports_them() {
        for bad in ["{\"a\":", "[1 2]", "{\"a\" 1}", "tru", "[1,]"] {
            let theirs = serde_json::from_str::<Value>(bad)
                .expect_err(bad)
                .to_string();
            match check(bad.as_bytes()) {
                Err(StrictError::Syntax(e)) => assert_eq!(e.to_string(), theirs, "{bad}"),
                other => panic!("{bad}: {other:?}"),
            }
        }
    }

    #[test]
    fn nesting_stops_at_serde_json_recursion_limit() {
        let nested = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        let deepest = check(nested(MAX_DEPTH).as_bytes()).expect("at the limit");
        assert_eq!(deepest.depth, MAX_DEPTH);
        assert!(serde_json::from_str::<Value>(&nested(MAX_DEPTH)).is_ok());
        for past in [MAX_DEPTH + 1, 100_000] {
            assert!(matches!(
                check(nested(past).as_bytes()),
                Err(StrictError::Syntax(_))
            ));
            assert!(serde_json::from_str::<Value>(&nested(past)).is_err());
        }
        let objects = format!(
            "{}1{}",
            "{\"a\":".repeat(MAX_DEPTH + 1),
            "}".repeat(MAX_DEPTH + 1)
        );
        assert!(matches!(
            check(objects.as_bytes()),
            Err(StrictError::Syntax(_))
        ));
    }

    #[test]
    fn values_past_the_cap_are_refused_without_reading_on() {
        let array = |n: usize| format!("[{}]", vec!["0"; n].join(","));
        // `[` plus n zeros: n + 1 values.
        assert_eq!(
            check(array(MAX_VALUES - 1).as_bytes())
                .expect("at the cap")
                .values,
            MAX_VALUES
        );
        assert!(matches!(
            check(array(MAX_VALUES).as_bytes()),
            Err(StrictError::TooManyValues { limit: MAX_VALUES })
        ));
        // Keys do not count; members' values do.
        assert_eq!(
            capped(br#"{"a":1,"b":{"c":[]}}"#, 4).map(|s| s.values).ok(),
            Some(4)
        );
        assert!(matches!(
            capped(br#"{"a":1,"b":{"c":[]}}"#, 3),
            Err(StrictError::TooManyValues { limit: 3 })
        ));
        // Past the cap nothing more is read: a syntax error later is not reached.
        assert!(matches!(
            capped(b"[0,0,0,0,oops", 3),
            Err(StrictError::TooManyValues { limit: 3 })
        ));
        // A duplicate before the cap is reported as such.
        assert!(matches!(
            capped(br#"[{"a":0,"a":0},0,0,0]"#, 3),
            Err(StrictError::DuplicateKey(_))
        ));
    }

    #[test]
    fn strings_and_keys_past_their_cap_are_refused() {
        let caps = Caps {
            string_bytes: 4,
            ..Caps::NONE
        };
        let walk = |text: &str| check_with_caps(text.as_bytes(), caps).0;
        assert!(walk(r#"{"abcd":"wxyz"}"#).is_ok());
        // Measured once unescaped: `\u00e9` is 2 bytes.
        assert!(walk(r#"["\u00e9\u00e9"]"#).is_ok());
        for over in [
            r#"["abcde"]"#,
            r#"{"abcde":1}"#,
            r#"["\u00e9\u00e9x"]"#,
            r#"["abcde", oops"#,
        ] {
            assert!(
                matches!(walk(over), Err(StrictError::StringTooLong { limit: 4 })),
                "{over}"
            );
        }
        let long = format!("[\"{}\"]", "x".repeat(MAX_STRING_BYTES + 1));
        assert!(matches!(
            check(long.as_bytes()),
            Err(StrictError::StringTooLong {
                limit: MAX_STRING_BYTES
            })
        ));
        let longest = format!("[\"{}\"]", "x".repeat(MAX_STRING_BYTES));
        assert_eq!(
            check(longest.as_bytes()).map(|s| s.longest_string).ok(),
            Some(MAX_STRING_BYTES)
        );
    }
}
