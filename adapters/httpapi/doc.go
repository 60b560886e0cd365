// Package httpapi is the HTTP driving adapter: the gorilla/mux router, thin
// handlers that parse a request, call one app service and encode the answer,
// the SSE writer, authentication and authorization middleware, request
// validation against the OpenAPI document, and the one table that maps
// errors to statuses.
package httpapi
