# frozen_string_literal: true

class SignupsController < ApplicationController
  skip_forgery_protection

  # POST /signups: validates a form object and answers 201 or 422 with JSON.
  def create
    signup = Signup.new(params.require(:signup).permit(:name, :email, :plan))
    if signup.valid?
      render json: signup, status: :created
    else
      render json: { errors: signup.errors.full_messages }, status: :unprocessable_entity
    end
  end
end
