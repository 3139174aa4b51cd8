//! The JSON Schema of the request structs the service parses (tool arguments, REST bodies),
//! derived with schemars from the structs themselves: `tools/list` serves what the parser
//! accepts, and the bounds come from `xmemo_core::limits`. This module holds the pieces the
//! derive cannot name itself (slugs, the core enums) and the settings of the generator.

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde_json::Value;
use xmemo_core::limits::SLUG_MAX_CHARS;
use xmemo_core::validate::SLUG_PATTERN;
use xmemo_core::{ComponentType, MemoryKind, SaveIntent};

/// The schema of `T` as a tool's input schema: inline (no `$defs`), no meta-schema, no root
/// title or description (the tool has its own), optional fields as their type alone (an
/// absent field is how to leave one out) and integers without schemars' storage formats.
pub fn input_schema<T: JsonSchema>() -> Value {
    let generator = schemars::generate::SchemaSettings::draft2020_12()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .into_generator();
    let mut value = generator.into_root_schema_for::<T>().to_value();
    if let Some(root) = value.as_object_mut() {
        root.remove("title");
        root.remove("description");
    }
    tidy(&mut value);
    value
}

/// Drops `null` from the types and defaults of optional fields (leaving a field out is how to
/// say nothing) and the `int64`-style storage formats, and writes each description on one
/// line, everywhere.
fn tidy(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if map.get("default").is_some_and(Value::is_null) {
                map.remove("default");
            }
            // A description written as a doc comment keeps the comment's line breaks.
            if let Some(Value::String(text)) = map.get_mut("description") {
                *text = text.split_whitespace().collect::<Vec<_>>().join(" ");
            }
            if let Some(Value::Array(types)) = map.get_mut("type") {
                types.retain(|t| t != "null");
                if let [only] = types.as_slice() {
                    let only = only.clone();
                    map.insert("type".into(), only);
                }
            }
            if map
                .get("format")
                .and_then(Value::as_str)
                .is_some_and(|f| f.starts_with("int") || f.starts_with("uint"))
            {
                map.remove("format");
            }
            for v in map.values_mut() {
                tidy(v);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(tidy),
        _ => {}
    }
}

/// A slug (SPEC §1, the Agent Skills `name` rule): also projects and tags.
pub fn slug(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "string",
        "pattern": SLUG_PATTERN, "minLength": 1, "maxLength": SLUG_MAX_CHARS,
    })
}

/// Tags: slugs (at most [`xmemo_core::limits::MEMORY_TAGS_MAX`]).
pub fn tags(generator: &mut SchemaGenerator) -> Schema {
    let mut tag = slug(generator);
    tag.insert(
        "description".into(),
        "A tag: lowercase words joined by hyphens, e.g. \"code-style\".".into(),
    );
    json_schema!({
        "type": "array", "maxItems": xmemo_core::limits::MEMORY_TAGS_MAX,
        "items": tag,
    })
}

fn one_of(values: impl IntoIterator<Item = &'static str>) -> Schema {
    let values: Vec<&str> = values.into_iter().collect();
    json_schema!({ "type": "string", "enum": values })
}

pub fn memory_kind(_: &mut SchemaGenerator) -> Schema {
    one_of(MemoryKind::ALL.iter().map(|k| k.as_str()))
}

pub fn component_type(_: &mut SchemaGenerator) -> Schema {
    one_of(ComponentType::ALL.iter().map(|k| k.as_str()))
}

pub fn save_intent(_: &mut SchemaGenerator) -> Schema {
    one_of(SaveIntent::ALL.iter().map(|k| k.as_str()))
}

/// An RFC 3339 instant.
pub fn instant(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "string", "format": "date-time" })
}

/// Any JSON object.
pub fn object(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "object" })
}
