//! JSON read with its objects' keys in the order the text has them (a `serde_json::Value`
//! sorts them, or keeps them, depending on a feature some other crate may turn on), so a test
//! can check the order a client sees.

use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Number, Value};

/// A JSON value whose objects keep their keys in the text's order (and any repeated key).
#[derive(Clone, Debug, PartialEq)]
pub enum Ordered {
    Null,
    Bool(bool),
    Number(Number),
    String(String),
    Array(Vec<Ordered>),
    Object(Vec<(String, Ordered)>),
}

/// `text` read as [`Ordered`] JSON; panics, quoting it, if it is not JSON.
pub fn parse(text: &str) -> Ordered {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text:?}"))
}

/// GET `url`: the status, the body as JSON and the same body with its keys' order kept,
/// checking the two reads agree.
pub async fn get_ordered(url: &str) -> (u16, Value, Ordered) {
    let (status, text) = super::get_text(url).await;
    let body = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{url}: {e}: {text:?}"));
    let ordered = parse(&text);
    assert_eq!(ordered.value(), body, "{url}: the two parses agree");
    (status, body, ordered)
}

impl Ordered {
    /// An object's keys, in order; panics on anything else.
    pub fn keys(&self) -> Vec<&str> {
        match self {
            Ordered::Object(entries) => entries.iter().map(|(k, _)| k.as_str()).collect(),
            other => panic!("not an object: {other:?}"),
        }
    }

    /// An object's value at `key`; panics if it has none.
    pub fn at(&self, key: &str) -> &Ordered {
        match self {
            Ordered::Object(entries) => entries
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v)
                .unwrap_or_else(|| panic!("no {key:?} in {self:?}")),
            other => panic!("not an object: {other:?}"),
        }
    }

    /// An array's items; panics on anything else.
    pub fn items(&self) -> &[Ordered] {
        match self {
            Ordered::Array(items) => items,
            other => panic!("not an array: {other:?}"),
        }
    }

    /// The same value as a `serde_json::Value`, to compare contents.
    pub fn value(&self) -> Value {
        match self {
            Ordered::Null => Value::Null,
            Ordered::Bool(b) => Value::Bool(*b),
            Ordered::Number(n) => Value::Number(n.clone()),
            Ordered::String(s) => Value::String(s.clone()),
            Ordered::Array(items) => Value::Array(items.iter().map(Ordered::value).collect()),
            Ordered::Object(entries) => Value::Object(
                entries
                    .iter()
                    .map(|(k, v)| (k.clone(), v.value()))
                    .collect(),
            ),
        }
    }
}

impl<'de> Deserialize<'de> for Ordered {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Ordered, D::Error> {
        deserializer.deserialize_any(OrderedVisitor)
    }
}

struct OrderedVisitor;

impl<'de> Visitor<'de> for OrderedVisitor {
    type Value = Ordered;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_unit<E>(self) -> Result<Ordered, E> {
        Ok(Ordered::Null)
    }

    fn visit_bool<E>(self, v: bool) -> Result<Ordered, E> {
        Ok(Ordered::Bool(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Ordered, E> {
        Ok(Ordered::Number(v.into()))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Ordered, E> {
        Ok(Ordered::Number(v.into()))
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Ordered, E> {
        Number::from_f64(v)
            .map(Ordered::Number)
            .ok_or_else(|| E::custom("a number JSON cannot hold"))
    }

    fn visit_str<E>(self, v: &str) -> Result<Ordered, E> {
        Ok(Ordered::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Ordered, E> {
        Ok(Ordered::String(v))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Ordered, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Ordered::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Ordered, A::Error> {
        let mut entries = Vec::new();
        while let Some((key, value)) = map.next_entry::<String, Ordered>()? {
            entries.push((key, value));
        }
        Ok(Ordered::Object(entries))
    }
}
