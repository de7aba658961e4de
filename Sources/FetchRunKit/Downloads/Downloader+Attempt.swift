import Foundation

/// One download attempt: from the `.part` file on disk to a finished file moved into place,
/// or the reason it stopped. Runs off the actor; only its bookkeeping hops back on.
extension Downloader {
    enum Outcome {
        case done(path: String, bytes: Int64, added: Int64)
        case failed(reason: String, retryable: Bool, deletePart: Bool)
        case cancelled(added: Int64)
    }

    /// Downloads one entry into its `.part` file and, when complete, renames it into place.
    nonisolated func download(_ entry: DownloadEntry) async -> Outcome {
        let directory = entry.directory
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            return .failed(reason: "cannot create \(directory): \(error.localizedDescription)", retryable: false, deletePart: false)
        }
        // No link of either kind: a symlink or hard link planted at the part's name must not
        // send bytes elsewhere or get another file truncated.
        let descriptor: Int32
        do {
            descriptor = try SafeFile.openForWriting(entry.partPath, flags: O_WRONLY | O_CREAT)
        } catch {
            return .failed(reason: "cannot open \(entry.partPath): \(error.description)", retryable: false, deletePart: false)
        }
        defer { close(descriptor) }
        var info = stat()
        fstat(descriptor, &info)
        var offset = Int64(info.st_size)
        let startBytes = offset
        if offset > 0, entry.validator == nil {
            // Nothing to prove the server's file is still the one these bytes came from.
            logger.info("\(entry.partName).part: \(offset) bytes but no ETag or Last-Modified to resume with; starting over")
            ftruncate(descriptor, 0)
            offset = 0
        }

        // A file already in place under this name (see `adoptsExisting`), and its size.
        let existingPath = (directory as NSString).appendingPathComponent(entry.partName)
        let existingSize = entry.adoptsExisting == true && offset == 0 && FileNames.isRegularFile(entry.partName, in: directory)
            ? Self.fileSize(existingPath) : nil

        // At most twice: a 416 for a stale offset starts the file over once.
        for _ in 0..<2 {
            let resume = offset > 0 ? DownloadRequest.Resume(offset: offset, validator: entry.validator!) : nil
            // A tick right away saves the new validator: a kill from then on can resume.
            let file = DownloadFile(descriptor: descriptor, currentSize: offset) { [weak self] in
                Task { await self?.tickNow() }
            }
            file.existingFileSize = existingSize.flatMap { $0 > 0 ? $0 : nil }
            await attach(file, to: entry, resumingAt: resume?.offset)
            var request = DownloadRequest(
                url: entry.url, maxBytes: entry.maxSize, maxBytesPerSecond: entry.maxRate,
                connectTimeout: limits.connectTimeout, stallTimeout: limits.stallTimeout, userAgent: userAgent, resume: resume
            )
            request.transport = limits.sourceTransports[entry.source] ?? HTTPTransport()
            let response: DownloadResponse
            let started = http.clock.now
            let shownURL = HTTPText.removingCredentials(from: entry.url)
            do {
                response = try await http.download(request, into: file)
                // -v: what happened on the wire, as for feeds.
                logger.info("GET \(shownURL)\(resume.map { " (from byte \($0.offset))" } ?? "") → \(response.status), \(response.status == 200 ? response.fileBytes : max(0, response.fileBytes - offset)) bytes in \(DurationText.format(http.clock.now - started))")
            } catch _ where file.matchesExistingFile {
                // The server's file has the size of the one already here: adopted, not fetched.
                unlink(entry.partPath)
                logger.info("\(entry.partName): already in \(directory) with the size the server announces; adopted")
                return .done(path: existingPath, bytes: existingSize ?? 0, added: 0)
            } catch is CancellationError {
                return .cancelled(added: max(0, file.bytesInFile - startBytes))
            } catch let error as HTTPError {
                if let mismatch = file.validatorMismatch, resume != nil {
                    // The part's bytes belong to a version the server no longer has: start over.
                    logger.info("\(entry.partName).part: \(mismatch); downloading it again from the start")
                    ftruncate(descriptor, 0)
                    offset = 0
                    continue
                }
                return .failed(reason: error.message, retryable: error.kind == .network, deletePart: error.kind == .bodyTooLarge)
            } catch {
                return .failed(reason: "\(error)", retryable: true, deletePart: false)
            }

            // 416 with `bytes */<size>`: nothing past the offset. When the size is the offset,
            // the part was already whole (a kill before it was moved into place).
            let wholeAlready = response.status == 416 && resume != nil && Self.unsatisfiedRangeSize(response.headers["content-range"]) == offset
            if response.status == 416, resume != nil, !wholeAlready {
                ftruncate(descriptor, 0)
                offset = 0
                continue
            }
            guard response.wroteBody || wholeAlready else {
                let retryable = response.status >= 500 || response.status == 429 || response.status == 408
                return .failed(reason: "HTTP \(response.status)", retryable: retryable, deletePart: false)
            }
            let added = response.status == 200 ? response.fileBytes : response.fileBytes - startBytes
            let expected = wholeAlready ? offset : response.announcedSize ?? entry.enclosureLength.flatMap { $0 > 0 ? $0 : nil }
            if let expected, expected != response.fileBytes {
                let whose = response.announcedSize != nil ? "the server announced" : "the feed gave"
                return .failed(reason: "incomplete: \(response.fileBytes) bytes, \(whose) \(expected)", retryable: true, deletePart: false)
            }
            guard fsync(descriptor) == 0 else {
                return .failed(reason: "cannot write \(entry.partPath): \(String(cString: strerror(errno)))", retryable: true, deletePart: false)
            }
            let suggested = response.headers["content-disposition"].flatMap(FileNames.fromContentDisposition)
            // A resumed response may leave out the name the first one gave.
            switch Self.moveIntoPlace(entry.partPath, directory: directory, name: suggested ?? entry.suggestedName ?? entry.partName) {
            case .success(let path):
                return .done(path: path, bytes: response.fileBytes, added: added)
            case .failure(.failed(let reason)):
                return .failed(reason: reason, retryable: false, deletePart: false)
            }
        }
        return .failed(reason: "the server refused the range, or answered it from a different file, twice", retryable: false, deletePart: true)
    }

    /// The file of an entry a killed process had already moved into place but not yet
    /// recorded as done: at its name, of the size the server announced, owned by no other
    /// entry. Its part file, left when the kill came between link and unlink, is removed.
    static func finishedEarlier(_ entry: DownloadEntry, ownedByAnother: (String) -> Bool) -> String? {
        guard let size = entry.size else { return nil }
        let path = (entry.directory as NSString).appendingPathComponent(entry.suggestedName ?? entry.partName)
        guard FileManager.default.fileExists(atPath: path), fileSize(path) == size, !ownedByAnother(path) else { return nil }
        let part = fileSize(entry.partPath)
        guard part == 0 || part == size else { return nil }
        unlink(entry.partPath)
        return path
    }

    /// The size in a 416's `Content-Range: bytes */<size>`.
    static func unsatisfiedRangeSize(_ header: String?) -> Int64? {
        guard let header, let slash = header.firstIndex(of: "/"), header.lowercased().hasPrefix("bytes *") else { return nil }
        return Int64(header[header.index(after: slash)...].trimmingCharacters(in: .whitespaces))
    }

    enum PlacementError: Error { case failed(String) }

    /// Renames the finished part to `name`, or `name-2.ext`, … — never over an existing file
    /// (`link` fails rather than replace), then makes the new entry durable.
    static func moveIntoPlace(_ partPath: String, directory: String, name: String) -> Result<String, PlacementError> {
        let (stem, ext) = FileNames.split(name)
        var candidate = name
        var counter = 2
        while true {
            let target = (directory as NSString).appendingPathComponent(candidate)
            if link(partPath, target) == 0 {
                unlink(partPath)
                let folder = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
                if folder >= 0 {
                    fsync(folder)
                    close(folder)
                }
                return .success(target)
            }
            guard errno == EEXIST, counter < 10_000 else {
                return .failure(.failed("cannot move \(partPath) to \(target): \(String(cString: strerror(errno)))"))
            }
            candidate = "\(stem)-\(counter)\(ext)"
            counter += 1
        }
    }
}
