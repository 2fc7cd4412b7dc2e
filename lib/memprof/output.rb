# frozen_string_literal: true

module Memprof
  # Where the API writes: an IO (anything with #write, $stderr by default), or the path of a
  # file (a String or a Pathname). Errors name the caller's path, not a scratch file.
  module Output
    # Yields an IO: `out` itself, or the file at path `out` opened for writing (truncated).
    def self.open(out, api)
      return yield(out) if io?(out)

      path = path_of(out, api)
      file = with_path_in_errors(path, api) { File.open(path, "w") }
      begin
        yield file
      ensure
        file.close
      end
    end

    # Raises as `open` would when `out` is a path that cannot be written (no such directory, no
    # permission), without creating or truncating anything.
    def self.check_writable(out, api)
      return if io?(out)

      path = path_of(out, api)
      dir = File.dirname(path)
      raise Errno::ENOENT, "#{api}: cannot write #{path}" unless File.directory?(dir)
      raise Errno::EISDIR, "#{api}: cannot write #{path}" if File.directory?(path)
      raise Errno::EACCES, "#{api}: cannot write #{path}" unless File.writable?(File.exist?(path) ? path : dir)
    end

    # Yields the path of a file to write in full; then that file replaces `target` (a path: by
    # rename, so readers never see half a file and an error leaves the old file alone) or is
    # copied into it (an IO). A symbolic link is written through (its target is replaced), and
    # a device, FIFO or socket is written into: renaming over /dev/null, which `memprof dump -p
    # PID -o /dev/null` run as root did, replaced it with a file for the whole machine.
    def self.replace(target, api)
      if io?(target)
        private_scratch_file(api) do |partial|
          yield partial
          File.open(partial, "rb") { |f| IO.copy_stream(f, target) }
        end
        return
      end
      shown = path_of(target, api)
      path = link_target(shown)
      raise Errno::EISDIR, "#{api}: cannot write #{shown}" if File.directory?(path)
      return self.open(path, api) { |io| replace(io, api) { |partial| yield partial } } if special_file?(path)

      scratch_file(path, "partial", api) do |partial|
        yield partial
        with_path_in_errors(shown, api) { File.rename(partial, path) }
      end
    end

    # Whether `replace` writes into the path `target` names (a FIFO, device or socket, followed
    # through links), where a writer waits for the reader, instead of renaming a file over it.
    def self.written_into?(target, api)
      return false if io?(target)

      special_file?(link_target(path_of(target, api)))
    end

    # A device, FIFO or socket (what exists and is neither a regular file nor a directory).
    def self.special_file?(path)
      File.exist?(path) && !File.file?(path) && !File.directory?(path)
    end
    private_class_method :special_file?

    # The file `path` names once symbolic links are followed (a link to a file not created yet
    # included), or `path` when the links go round.
    def self.link_target(path)
      40.times do
        return path unless File.symlink?(path)

        path = File.expand_path(File.readlink(path), File.dirname(path))
      end
      path
    end
    private_class_method :link_target

    # Yields the path of a new empty file beside `near` (same directory, so a rename is atomic),
    # removed afterwards whatever happens.
    def self.scratch_file(near, tag, api)
      scratch = scratch_path(near, tag, owner_pid)
      begin
        with_path_in_errors(near, api) { create_exclusively(scratch) }
      rescue Errno::EEXIST
        raise Errno::EEXIST, "#{api}: cannot write #{near}: its scratch file #{scratch} exists " \
                             "(left by a process of this pid, or put there by someone else)"
      end
      removed_afterwards(scratch) { yield scratch }
    end

    # Yields the path of a new empty file of this user's only (0600) in the temporary directory,
    # under a random name, removed afterwards. (Not tmpdir's Dir.mktmpdir: it is a default gem,
    # which the attach agent would activate inside a running app -- reading gem specs, a blocking
    # call per directory entry, each a wait for the GVL behind the app's busy threads -- and
    # which cannot be required in trap context.)
    def self.private_scratch_file(api)
      name = format("memprof-%d-%016x.output", Native.getpid, Random.rand(1 << 64))
      scratch = File.join(private_scratch_dir, name)
      with_path_in_errors(scratch, api) { create_exclusively(scratch, 0o600) }
      removed_afterwards(scratch) { yield scratch }
    end

    # $TMPDIR when it is a directory this process can write, else /tmp.
    def self.private_scratch_dir
      dir = ENV.fetch("TMPDIR", "")
      !dir.empty? && File.directory?(dir) && File.writable?(dir) ? dir : "/tmp"
    end

    # EXCL: never through a link or a FIFO someone put in a shared directory under this name.
    def self.create_exclusively(path, mode = 0o666)
      File.open(path, File::WRONLY | File::CREAT | File::EXCL, mode, &:close)
    end

    def self.removed_afterwards(path)
      yield
    ensure
      File.unlink(path) if File.exist?(path)
    end
    private_class_method :create_exclusively, :removed_afterwards, :private_scratch_dir

    # The name of process `pid`'s scratch file `tag` beside `near`.
    def self.scratch_path(near, tag, pid)
      File.join(File.dirname(near), ".#{File.basename(near)}.#{pid}.#{tag}")
    end

    # The scratch files a dump to `path` by the child process `child`, whose files are named
    # after process `owner` (owner_pid), may leave when killed: `replace`'s "partial" beside the
    # file and dump_all's "raw" beside that; for a FIFO, device or socket, the child's private
    # scratch file and its "raw" in the temporary directory.
    def self.dump_scratch_files(path, owner, child)
      partial = scratch_path(link_target(path), "partial", owner)
      [partial, *private_scratch_files(child)].flat_map { |file| [file, scratch_path(file, "raw", owner)] }
    end

    # The private scratch files (private_scratch_file) process `pid` made and did not remove.
    def self.private_scratch_files(pid)
      dir = private_scratch_dir
      Dir.children(dir).grep(/\Amemprof-#{pid}-\h{16}\.output\z/).map { |name| File.join(dir, name) }
    rescue SystemCallError
      []
    end
    private_class_method :private_scratch_files

    # Whose scratch files these are: this process's, or, in a child that writes a dump for its
    # parent (ChildDump), the parent's, which removes them if it has to end the child.
    def self.owner_pid
      @owner_pid || Native.getpid
    end

    def self.owner_pid=(pid)
      @owner_pid = pid
    end

    # A File is an IO; a Pathname has #write too, but names a path.
    def self.io?(out)
      out.is_a?(IO) || (out.respond_to?(:write) && !out.respond_to?(:to_path))
    end

    def self.path_of(out, api)
      return out.to_path if out.respond_to?(:to_path)
      return out.to_str if out.respond_to?(:to_str)

      raise TypeError, "#{api}: expected an IO or a path (String or Pathname), got #{out.class}"
    end

    # Re-raises a failed file operation with the caller's path in the message (the class stays,
    # so `rescue Errno::ENOENT` still works).
    def self.with_path_in_errors(path, api)
      yield
    rescue SystemCallError => e
      raise e.class, "#{api}: cannot write #{path}"
    end
    private_class_method :with_path_in_errors
  end
end
