// Package crypto hashes passwords with argon2id, signs session tokens as
// HS256 JWTs and seals provider keys with Fernet. Hashes use the PHC string
// format so that their parameters travel with them and can be raised later
// without invalidating old ones.
package crypto
