# frozen_string_literal: true

class PostsController < ApplicationController
  PER_PAGE = 10

  # GET /posts.json?page=N: a page of posts with their authors, as JSON.
  def index
    page = params.fetch(:page, 1).to_i.clamp(1, 1_000)
    posts = Post.recent.includes(:author).limit(PER_PAGE).offset((page - 1) * PER_PAGE)
    render json: {
      page: page,
      posts: posts.map do |post|
        { id: post.id, title: post.title, summary: post.summary, author: post.author.name,
          views: post.views }
      end
    }
  end

  # GET /posts/:id: one post with its comments, rendered by ERB inside the layout.
  def show
    @post = Post.includes(:author, :comments).find(params[:id])
  end
end
