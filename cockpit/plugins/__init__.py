"""Plugin API and loader. Bundled plugins live in ../plugins as their own packages."""
