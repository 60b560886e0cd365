package inspect

import (
	"fmt"
	"image"
	_ "image/gif"  // registers GIF with image.DecodeConfig
	_ "image/jpeg" // registers JPEG
	_ "image/png"  // registers PNG
	"io"

	_ "golang.org/x/image/webp" // registers WebP

	"github.com/entityenrich/enrich/domain/attachment"
)

// ImageInfo returns an image's format ("png", "jpeg", "gif", "webp") and
// dimensions from its header alone, without decoding the pixels (the
// sandbox model describes images with it).
func ImageInfo(r io.ReaderAt, size int64) (format string, width, height int, err error) {
	cfg, format, err := image.DecodeConfig(io.NewSectionReader(r, 0, size))
	if err != nil {
		return "", 0, 0, fmt.Errorf("%w: %v", attachment.ErrUnreadable, err)
	}
	return format, cfg.Width, cfg.Height, nil
}
