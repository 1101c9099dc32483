//! [`section`]: how a configuration section whose YAML value is `null` reads.

use serde::{Deserialize, Deserializer};

/// Deserialize a section or map whose YAML value may be `null` (a key with everything
/// under it commented out) as its default, so `agent:` alone is not a type error.
pub(super) fn section<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}
