package gcs

// A bit-at-a-time reference Golomb-Rice codec, written for clarity rather
// than speed, against which the fast paths are checked.

// refDecode decodes n values from stream, or reports ok=false if the stream
// ends first. It does not check trailing data or padding.
func refDecode(n uint32, p uint8, stream []byte) (values []uint64, ok bool) {
	bit := 0
	read := func() (uint64, bool) {
		if bit >= len(stream)*8 {
			return 0, false
		}
		b := stream[bit/8] >> (7 - bit%8) & 1
		bit++
		return uint64(b), true
	}
	var v uint64
	for range n {
		var q uint64
		for {
			b, ok := read()
			if !ok {
				return nil, false
			}
			if b == 0 {
				break
			}
			q++
		}
		var rem uint64
		for range p {
			b, ok := read()
			if !ok {
				return nil, false
			}
			rem = rem<<1 | b
		}
		v += q<<p | rem
		values = append(values, v)
	}
	return values, true
}

// refEncode encodes sorted values, zero-padded to a byte.
func refEncode(values []uint64, p uint8) []byte {
	var out []byte
	bit := 0
	write := func(b uint64) {
		if bit%8 == 0 {
			out = append(out, 0)
		}
		out[len(out)-1] |= byte(b) << (7 - bit%8)
		bit++
	}
	var last uint64
	for _, v := range values {
		d := v - last
		last = v
		for range d >> p {
			write(1)
		}
		write(0)
		for i := int(p) - 1; i >= 0; i-- {
			write(d >> uint(i) & 1)
		}
	}
	return out
}

// bitString turns "1101 0..." (spaces ignored) into bytes, zero-padded.
func bitString(s string) []byte {
	var bits []byte
	for _, c := range s {
		switch c {
		case '0', '1':
			bits = append(bits, byte(c-'0'))
		}
	}
	out := make([]byte, (len(bits)+7)/8)
	for i, b := range bits {
		out[i/8] |= b << (7 - i%8)
	}
	return out
}
