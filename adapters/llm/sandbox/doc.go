// Package sandbox is the built-in deterministic model provider behind the
// sandbox::* keys: an llms.Model that answers without a network with a JSON
// object valid against the requested schema, derived from the entity in the
// prompt and seeded by the model's name. It lets the quick start, examples,
// benchmarks and tests run the same code path as a real provider.
package sandbox
