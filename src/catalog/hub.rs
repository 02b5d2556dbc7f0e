//! Hugging Face datasets as sources of submissions, problems and tests: `org/name`, or `org/prefix-*` for every dataset of
//! `org` whose name matches. Files are downloaded into the hub cache (`HF_HOME`) with `hf-hub`'s
//! blocking API; only strings that name no local path get here, so offline use never touches it.
//! A dataset already in the hub cache is used from there with `HF_HUB_OFFLINE=1`, or when the
//! hub cannot be reached, as `huggingface_hub` does.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use hf_hub::api::sync::{Api, ApiBuilder};
use hf_hub::Cache;
use serde::Deserialize;

use super::DatasetSource;

const DEFAULT_ENDPOINT: &str = "https://huggingface.co";

/// Whether a string looks like a hub dataset id: `org/name`, wildcards allowed in the name.
/// A name that looks like a file (`results/model.jsonl`) is never one: a missing local file must
/// say "no such file", not fail on the network.
pub(crate) fn is_hub_id(s: &str) -> bool {
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
pub(crate) fn resolve(id: &str, endpoint: Option<&str>) -> Result<Vec<DatasetSource>> {
    let (org, name) = id
        .split_once('/')
        .with_context(|| format!("`{id}` is not a hub id"))?;
    let endpoint = endpoint
        .map(str::to_string)
        .or_else(|| std::env::var("HF_ENDPOINT").ok())
        .unwrap_or_else(|| DEFAULT_ENDPOINT.to_string());
    let cache = cache_dir();
    if offline() {
        let found = cache
            .as_deref()
            .map(|dir| from_cache(dir, org, name))
            .unwrap_or_default();
        if found.is_empty() {
            bail!(
                "`{id}`: no such local file or folder, and HF_HUB_OFFLINE is set so the Hugging \
                 Face hub was not asked; it is not in the hub cache either ({}); download the \
                 dataset and pass its local folder",
                cache
                    .as_deref()
                    .map_or("none found".into(), |d| d.display().to_string())
            );
        }
        return Ok(found);
    }
    let e = match from_hub(&endpoint, cache.as_deref(), org, name) {
        Ok(found) => return Ok(found),
        Err(e) => e,
    };
    // One clear sentence with the root cause: the HTTP client's own chain repeats the URL and
    // the DNS failure several times.
    let cause = e.root_cause();
    match cache
        .as_deref()
        .map(|dir| (dir, from_cache(dir, org, name)))
    {
        Some((dir, found)) if !found.is_empty() => {
            tracing::warn!(
                "`{id}`: the Hugging Face hub ({endpoint}) could not be asked ({cause}); using \
                 the copy in the hub cache ({})",
                dir.display()
            );
            Ok(found)
        }
        _ => bail!(
            "`{id}` is not a local path, so it was looked up on the Hugging Face hub ({endpoint}), \
             which failed ({cause}); check the name and the network, or download the dataset and \
             pass its local folder"
        ),
    }
}

/// Asks the hub, downloading what the cache lacks.
fn from_hub(
    endpoint: &str,
    cache: Option<&Path>,
    org: &str,
    name: &str,
) -> Result<Vec<DatasetSource>> {
    let names = if name.contains(['*', '?']) {
        let names = list_datasets(endpoint, cache, org, name)?;
        if names.is_empty() {
            bail!("no dataset of `{org}` on the hub matches `{name}`");
        }
        names
    } else {
        vec![name.to_string()]
    };
    let api = api(endpoint, cache)?;
    names
        .iter()
        .map(|name| download(&api, &format!("{org}/{name}")))
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
fn api(endpoint: &str, cache: Option<&Path>) -> Result<Api> {
    let cache = cache.context("no hub cache folder: set HF_HOME")?;
    let builder = ApiBuilder::from_cache(Cache::new(cache.to_path_buf()))
        .with_progress(false)
        .with_endpoint(endpoint.to_string());
    Ok(builder.build()?)
}

/// The hub cache folder, found as `huggingface_hub` finds it: `HF_HUB_CACHE`, else
/// `$HF_HOME/hub`, else `~/.cache/huggingface/hub` (hf-hub alone ignores `HF_HUB_CACHE`).
fn cache_dir() -> Option<PathBuf> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = var("HF_HUB_CACHE") {
        return Some(PathBuf::from(dir));
    }
    if let Some(home) = var("HF_HOME") {
        return Some(PathBuf::from(home).join("hub"));
    }
    var("HOME").map(|home| PathBuf::from(home).join(".cache/huggingface/hub"))
}

/// The datasets `org/name` (wildcards allowed in `name`) already in the hub cache, each at the
/// revision its `refs/main` names. The layout is the one `huggingface_hub` and hf-hub share:
/// `datasets--ORG--NAME/refs/main` holds a commit, `snapshots/COMMIT/` the files.
fn from_cache(cache: &Path, org: &str, name: &str) -> Vec<DatasetSource> {
    let Ok(matcher) = glob::Pattern::new(name) else {
        return Vec::new();
    };
    let prefix = format!("datasets--{org}--");
    let mut names: Vec<String> = std::fs::read_dir(cache)
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| {
                    e.file_name()
                        .to_str()?
                        .strip_prefix(&prefix)
                        .map(str::to_string)
                })
                .filter(|n| matcher.matches(n))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
        .iter()
        .filter_map(|n| cached_dataset(&cache.join(format!("{prefix}{n}")), &format!("{org}/{n}")))
        .collect()
}

/// One cached dataset's data files, chosen as [`download`] chooses them.
fn cached_dataset(repo: &Path, id: &str) -> Option<DatasetSource> {
    let commit = std::fs::read_to_string(repo.join("refs/main")).ok()?;
    let snapshot = repo.join("snapshots").join(commit.trim());
    let mut names: Vec<String> = walkdir::WalkDir::new(&snapshot)
        .into_iter()
        .flatten()
        .filter(|e| !e.file_type().is_dir())
        .filter_map(|e| {
            let relative = e.path().strip_prefix(&snapshot).ok()?;
            relative.to_str().map(str::to_string)
        })
        .collect();
    names.sort();
    let chosen = data_files(names);
    if chosen.is_empty() {
        return None;
    }
    Some(source(
        id,
        chosen.iter().map(|f| snapshot.join(f)).collect(),
    ))
}

/// The data files of a dataset among its files: parquet/jsonl, only those of the train split
/// when it has one (the reference loads `split="train"`), never the `reports/` folder.
fn data_files(files: Vec<String>) -> Vec<String> {
    let data: Vec<String> = files
        .into_iter()
        .filter(|f| !f.starts_with("reports/"))
        .filter(|f| f.ends_with(".parquet") || f.ends_with(".jsonl"))
        .collect();
    let train: Vec<String> = data
        .iter()
        .filter(|f| f.contains("train"))
        .cloned()
        .collect();
    if train.is_empty() {
        data
    } else {
        train
    }
}

/// A dataset's source, named as its results will be.
fn source(id: &str, files: Vec<PathBuf>) -> DatasetSource {
    let name = id.rsplit('/').next().unwrap_or(id);
    DatasetSource {
        config_name: name.strip_prefix("ioi-eval-").unwrap_or(name).to_string(),
        origin: id.to_string(),
        files,
    }
}

#[derive(Deserialize)]
struct ListedDataset {
    id: String,
}

/// Names of the datasets of `org` matching the wildcard `pattern`.
fn list_datasets(
    endpoint: &str,
    cache: Option<&Path>,
    org: &str,
    pattern: &str,
) -> Result<Vec<String>> {
    let matcher =
        glob::Pattern::new(pattern).with_context(|| format!("bad pattern `{pattern}`"))?;
    let prefix: String = pattern.chars().take_while(|c| !"*?".contains(*c)).collect();
    // hf-hub 0.4 has no listing call, but its requests go to `<endpoint>/api/<repo path>`: an
    // endpoint ending with the listing URL and a `#` turns the rest into a fragment, which is
    // never sent, so its authenticated client fetches `/api/datasets?author=..` as is.
    let listing = format!("{endpoint}/api/datasets?author={org}&search={prefix}&limit=10000#");
    let api = api(&listing, cache)?;
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

/// Downloads the data files of one dataset (see [`data_files`]) into the cache.
fn download(api: &Api, id: &str) -> Result<DatasetSource> {
    let repo = api.dataset(id.to_string());
    let info = repo
        .info()
        .map_err(anyhow::Error::from)
        .with_context(|| format!("cannot get the file list of dataset `{id}`"))?;
    let chosen = data_files(info.siblings.into_iter().map(|s| s.rfilename).collect());
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
    Ok(source(id, files))
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

    #[test]
    fn cached_datasets_are_found_by_id_and_wildcard_at_refs_main() {
        let cache = tempfile::tempdir().unwrap();
        for (name, commit) in [("ioi-eval-a", "c1"), ("ioi-eval-b", "c2"), ("other", "c3")] {
            let repo = cache.path().join(format!("datasets--org--{name}"));
            std::fs::create_dir_all(repo.join("refs")).unwrap();
            std::fs::write(repo.join("refs/main"), format!("{commit}\n")).unwrap();
            let snapshot = repo.join("snapshots").join(commit);
            std::fs::create_dir_all(snapshot.join("data")).unwrap();
            std::fs::create_dir_all(snapshot.join("reports")).unwrap();
            for file in [
                "data/train-0.parquet",
                "data/test-0.parquet",
                "reports/x.jsonl",
            ] {
                std::fs::write(snapshot.join(file), "").unwrap();
            }
        }
        // An older snapshot that refs/main no longer names is never read.
        std::fs::create_dir_all(cache.path().join("datasets--org--other/snapshots/old")).unwrap();
        let found = from_cache(cache.path(), "org", "ioi-eval-*");
        let names: Vec<&str> = found.iter().map(|d| d.config_name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        let other = from_cache(cache.path(), "org", "other");
        assert_eq!(other.len(), 1);
        assert_eq!(other[0].origin, "org/other");
        assert_eq!(
            other[0].files,
            [cache
                .path()
                .join("datasets--org--other/snapshots/c3/data/train-0.parquet")]
        );
        assert!(from_cache(cache.path(), "org", "missing").is_empty());
        assert!(from_cache(cache.path(), "nobody", "other").is_empty());
    }
}
