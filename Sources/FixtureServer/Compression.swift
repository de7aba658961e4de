import CBrotli
import CZlib

/// Compressed bodies for the fixture server.
enum Compression {
    static func gzip(_ bytes: [UInt8], level: Int32 = 6) -> [UInt8] {
        var stream = z_stream()
        fetchrun_deflate_init_gzip(&stream, level)
        defer { deflateEnd(&stream) }
        var output = [UInt8](repeating: 0, count: Int(deflateBound(&stream, uLong(bytes.count))) + 32)
        var input = bytes
        let produced = input.withUnsafeMutableBufferPointer { inBuffer in
            output.withUnsafeMutableBufferPointer { outBuffer in
                stream.next_in = inBuffer.baseAddress
                stream.avail_in = uInt(inBuffer.count)
                stream.next_out = outBuffer.baseAddress
                stream.avail_out = uInt(outBuffer.count)
                deflate(&stream, Z_FINISH)
                return outBuffer.count - Int(stream.avail_out)
            }
        }
        return Array(output[..<produced])
    }

    static func brotli(_ bytes: [UInt8]) -> [UInt8] {
        var size = BrotliEncoderMaxCompressedSize(bytes.count)
        var output = [UInt8](repeating: 0, count: size)
        let ok = BrotliEncoderCompress(5, BROTLI_DEFAULT_WINDOW, BROTLI_MODE_TEXT, bytes.count, bytes, &size, &output)
        precondition(ok == BROTLI_TRUE, "brotli compression failed")
        return Array(output[..<size])
    }

    /// 64 MiB of zeros, gzipped: about 64 KB on the wire, six times the default body cap.
    static let gzipBomb: [UInt8] = {
        var stream = z_stream()
        fetchrun_deflate_init_gzip(&stream, 6)
        defer { deflateEnd(&stream) }
        var zeros = [UInt8](repeating: 0, count: 1024 * 1024)
        var output: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        for index in 0..<64 {
            let flush = index == 63 ? Z_FINISH : Z_NO_FLUSH
            zeros.withUnsafeMutableBufferPointer { inBuffer in
                stream.next_in = inBuffer.baseAddress
                stream.avail_in = uInt(inBuffer.count)
                repeat {
                    let produced = buffer.withUnsafeMutableBufferPointer { outBuffer -> Int in
                        stream.next_out = outBuffer.baseAddress
                        stream.avail_out = uInt(outBuffer.count)
                        deflate(&stream, flush)
                        return outBuffer.count - Int(stream.avail_out)
                    }
                    output += buffer[..<produced]
                } while stream.avail_out == 0 || stream.avail_in > 0
            }
        }
        return output
    }()
}
