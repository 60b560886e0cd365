// Package crypto hashes passwords with argon2id and signs session tokens as
// HS256 JWTs. Hashes use the PHC string format so that their parameters
// travel with them and can be raised later without invalidating old ones.
package crypto
