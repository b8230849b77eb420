package apf

// Property tests report a failing seed instead of writing fail files.
import _ "github.com/fairslice/fairslice/internal/norapidfailfile"
