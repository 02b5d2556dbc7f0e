//! Hugging Face datasets as submission sources: `org/name`, or `org/prefix-*` for every dataset of
//! `org` whose name matches. Files are downloaded into the hub cache (`HF_HOME`) with `hf-hub`'s
//! blocking API; only strings that name no local path get here, so offline use never touches it.

use anyhow::{bail, Context, Result};
use hf_hub::api::sync::{Api, ApiBuilder};
use serde::Deserialize;

use super::submissions::DatasetSource;

const DEFAULT_ENDPOINT: &str = "https://huggingface.co";

/// Whether a string looks like a hub dataset id: `org/name`, wildcards allowed in the name.
/// A name that looks like a file (`results/model.jsonl`) is never one: a missing local file must
/// say "no such file", not fail on the network.
pub(super) fn is_hub_id(s: &str) -> bool {
    let Some((org, name)) = s.split_once('/') else {
        return false;
    };
    if [".jsonl", ".json", ".parquet", ".csv"]
        .iter()
        .any(|ext| name.to_ascii_lowercase().ends_with(ext))
        || org == "."
        || org == ".."
        || org.starts_with('~')
    {
        return false;
    }
    let ok = |part: &str, extra: &str| {
        !part.is_empty()
            && part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c) || extra.contains(c))
    };
    ok(org, "") && ok(name, "*?")
}

/// Resolves a hub id into datasets, downloading their files. `endpoint` overrides `HF_ENDPOINT`.
pub(super) fn resolve(id: &str, endpoint: Option<&str>) -> Result<Vec<DatasetSource>> {
    let (org, name) = id
        .split_once('/')
        .with_context(|| format!("`{id}` is not a hub id"))?;
    let endpoint = endpoint
        .map(str::to_string)
        .or_else(|| std::env::var("HF_ENDPOINT").ok())
        .unwrap_or_else(|| DEFAULT_ENDPOINT.to_string());
    if offline() {
        bail!(
            "`{id}`: no such local file or folder, and HF_HUB_OFFLINE is set so the Hugging Face \
             hub was not asked; download the dataset and pass its local folder"
        );
    }
    // One clear sentence with the root cause: the HTTP client's own chain repeats the URL and
    // the DNS failure several times.
    let offline_hint = |e: anyhow::Error| {
        anyhow::anyhow!(
            "`{id}` is not a local path, so it was looked up on the Hugging Face hub ({endpoint}), \
             which failed ({}); check the name and the network, or download the dataset and pass \
             its local folder",
            e.root_cause()
        )
    };
    let names = if name.contains(['*', '?']) {
        let names = list_datasets(&endpoint, org, name).map_err(offline_hint)?;
        if names.is_empty() {
            bail!("no dataset of `{org}` on the hub matches `{name}`");
        }
        names
    } else {
        vec![name.to_string()]
    };
    let api = api(&endpoint).map_err(offline_hint)?;
    names
        .iter()
        .map(|name| download(&api, &format!("{org}/{name}")).map_err(offline_hint))
        .collect()
}

/// `HF_HUB_OFFLINE=1`, as `huggingface_hub` understands it: never touch the network.
fn offline() -> bool {
    std::env::var("HF_HUB_OFFLINE").is_ok_and(|v| {
        matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "1" | "true" | "yes" | "on"
        )
    })
}

/// A blocking client (token and cache from the environment, like `huggingface_hub`).
fn api(endpoint: &str) -> Result<Api> {
    let builder = ApiBuilder::from_env()
        .with_progress(false)
        .with_endpoint(endpoint.to_string());
    Ok(builder.build()?)
}

#[derive(Deserialize)]
struct ListedDataset {
    id: String,
}

/// Names of the datasets of `org` matching the wildcard `pattern`.
fn list_datasets(endpoint: &str, org: &str, pattern: &str) -> Result<Vec<String>> {
    let matcher =
        glob::Pattern::new(pattern).with_context(|| format!("bad pattern `{pattern}`"))?;
    let prefix: String = pattern.chars().take_while(|c| !"*?".contains(*c)).collect();
    // hf-hub 0.4 has no listing call, but its requests go to `<endpoint>/api/<repo path>`: an
    // endpoint ending with the listing URL and a `#` turns the rest into a fragment, which is
    // never sent, so its authenticated client fetches `/api/datasets?author=..` as is.
    let listing = format!("{endpoint}/api/datasets?author={org}&search={prefix}&limit=10000#");
    let api = api(&listing)?;
    let listed: Vec<ListedDataset> = api
        .dataset("listing".to_string())
        .info_request()
        .call()
        .map_err(Box::new)
        .with_context(|| format!("cannot list the datasets of `{org}`"))?
        .into_json()
        .with_context(|| format!("unexpected answer listing the datasets of `{org}`"))?;
    let mut names: Vec<String> = listed
        .into_iter()
        .filter_map(|d| d.id.strip_prefix(&format!("{org}/")).map(str::to_string))
        .filter(|n| matcher.matches(n))
        .collect();
    names.sort();
    Ok(names)
}

/// Downloads the data files of one dataset: its parquet/jsonl files, only those of the train
/// split when it has one (the reference loads `split="train"`), never the `reports/` folder.
fn download(api: &Api, id: &str) -> Result<DatasetSource> {
    let repo = api.dataset(id.to_string());
    let info = repo
        .info()
        .map_err(anyhow::Error::from)
        .with_context(|| format!("cannot get the file list of dataset `{id}`"))?;
    let data: Vec<String> = info
        .siblings
        .into_iter()
        .map(|s| s.rfilename)
        .filter(|f| !f.starts_with("reports/"))
        .filter(|f| f.ends_with(".parquet") || f.ends_with(".jsonl"))
        .collect();
    let train: Vec<String> = data
        .iter()
        .filter(|f| f.contains("train"))
        .cloned()
        .collect();
    let chosen = if train.is_empty() { data } else { train };
    if chosen.is_empty() {
        bail!("dataset `{id}` has no parquet or jsonl file");
    }
    let mut files = Vec::new();
    for file in &chosen {
        let path = repo
            .get(file)
            .map_err(anyhow::Error::from)
            .with_context(|| format!("cannot download `{file}` of dataset `{id}`"))?;
        files.push(path);
    }
    let name = id.rsplit('/').next().unwrap_or(id);
    Ok(DatasetSource {
        config_name: name.strip_prefix("ioi-eval-").unwrap_or(name).to_string(),
        origin: id.to_string(),
        files,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hub_ids_are_org_slash_name() {
        assert!(is_hub_id("open-r1/ioi-sample-solutions"));
        assert!(is_hub_id("open-r1/models-*-fix"));
        assert!(!is_hub_id("results/x.jsonl/y"));
        assert!(!is_hub_id("org*/name"));
        assert!(!is_hub_id("model.jsonl"));
        assert!(!is_hub_id("results/model.jsonl"));
        assert!(!is_hub_id("./model"));
    }

    #[test]
    fn unreachable_hub_fails_with_a_clear_message() {
        // Port 9 (discard) on loopback is closed: the request fails at once, as offline.
        for id in ["some-org/some-dataset", "some-org/prefix-*"] {
            let err = resolve(id, Some("http://127.0.0.1:9")).unwrap_err();
            let msg = format!("{err:#}");
            assert!(
                msg.contains(id)
                    && msg.contains("not a local path")
                    && msg.contains("local folder"),
                "{msg}"
            );
        }
    }
}
