"""Tools around the engine: the policy store, policy diff and lint, question sets, impact analysis
(local and Dask), decision traces and vocabulary suggestions."""
