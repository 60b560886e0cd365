// Package jsonschema compiles and applies JSON Schema documents (draft
// 2020-12 unless a document names another draft) with
// santhosh-tekuri/jsonschema. It never fetches a referenced document: only
// references inside the compiled document resolve, so a user's schema cannot
// make the server read files or call the network.
package jsonschema
