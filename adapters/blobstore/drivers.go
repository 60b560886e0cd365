package blobstore

import (
	// The buckets ENRICH_BLOB_URL can name, registered on blob's default
	// URL mux.
	_ "gocloud.dev/blob/azureblob"
	_ "gocloud.dev/blob/fileblob"
	_ "gocloud.dev/blob/gcsblob"
	_ "gocloud.dev/blob/memblob"
	_ "gocloud.dev/blob/s3blob"
)
