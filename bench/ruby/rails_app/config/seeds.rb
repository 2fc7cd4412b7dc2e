# frozen_string_literal: true

# Deterministic data: 5 authors, 40 posts, 3 comments per post.
module BenchApp
  AUTHORS = 5
  POSTS = 40
  COMMENTS_PER_POST = 3
end

ActiveRecord::Base.transaction do
  authors = Array.new(BenchApp::AUTHORS) do |i|
    Author.create!(name: "Author #{i}", email: "author#{i}@example.com")
  end
  BenchApp::POSTS.times do |i|
    post = Post.create!(author: authors[i % authors.size], title: "Post number #{i}",
                        body: "Body of post #{i}. " * 20)
    BenchApp::COMMENTS_PER_POST.times do |j|
      post.comments.create!(commenter: "reader#{j}", body: "Comment #{j} on post #{i}")
    end
  end
end
