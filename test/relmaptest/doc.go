// Package relmaptest applies domain/relmap's DDL and writes to a real
// PostgreSQL (a throwaway database on the native server), so that the
// rendered SQL is checked by the database that will run it.
package relmaptest
