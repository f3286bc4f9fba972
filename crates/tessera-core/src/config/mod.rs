//! Configuration (being written).
pub mod spec;
pub use spec::Spec;
use crate::error::{Error, Result};
/// Deserialise `value` as `T`, reporting the dotted key path under `path` on error.
pub fn deserialize_at<T: serde::de::DeserializeOwned>(value: toml::Value, path: &str) -> Result<T> {
    let r: std::result::Result<T, serde_path_to_error::Error<toml::de::Error>> = serde_path_to_error::deserialize(value.into_deserializer_compat());
    r.map_err(|e| {
        let inner = e.path().to_string();
        let full = match (path.is_empty(), inner == "." || inner.is_empty()) {
            (true, _) => inner,
            (false, true) => path.to_string(),
            (false, false) => format!("{path}.{inner}"),
        };
        Error::config(full, e.into_inner().to_string())
    })
}
trait Compat { fn into_deserializer_compat(self) -> toml::Value; }
impl Compat for toml::Value { fn into_deserializer_compat(self) -> toml::Value { self } }
