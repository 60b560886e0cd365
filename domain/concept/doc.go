// Package concept is the semantic concept vocabulary's pure core: the
// concept and alias types, the normalization of identity texts, how an
// object's identity text is composed, the resolution ladder as a decision
// over what the stores found, cosine similarity, the built-in n-gram
// embedding, and the rules of the schema keywords that ask for a concept
// id (semantic_id and its companions).
//
// The ladder (REFERENCE.md §7) resolves an identity text to a concept id:
//
//  1. an id already present in the input is kept (round trips);
//  2. the text is composed from the object's identifying keys and its 1-1
//     nested objects' keys, then normalized (Normalize);
//  3. an exact match on a concept's text or alias wins, at no cost;
//  4. otherwise the nearest neighbours in the same (type, embedding model)
//     slice are compared: at or above the accept threshold the nearest is
//     reused;
//  5. candidates in the gray band [judge floor, accept) go to an identity
//     judge, or to the review list when no judge is set;
//  6. otherwise a new id is minted.
//
// Stores, embedders and the judge live elsewhere: Resolve takes their
// answers (the exact match, the neighbours, a verdict callback) and only
// decides.
package concept
